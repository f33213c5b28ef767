"""Builders of stored turns for the store tests."""

from __future__ import annotations

from session import RequestSnapshot, ResponseSnapshot, ResponseStatus, StoredResponse


def user_item(item_id: str, text: str) -> dict[str, object]:
    return {
        "id": item_id,
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text}],
    }


def assistant_item(item_id: str, text: str) -> dict[str, object]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def turn(
    response_id: str,
    parent: str | None = None,
    *,
    project: str = "default",
    status: ResponseStatus = "completed",
    instructions: str | None = None,
    inputs: int = 1,
) -> StoredResponse:
    """A turn whose input items are ``in_<id>_<n>`` and whose one output item is ``out_<id>``."""
    items = [
        user_item(f"in_{response_id}_{n}", f"question {n} of {response_id}") for n in range(inputs)
    ]
    return StoredResponse(
        id=response_id,
        previous_response_id=parent,
        project=project,
        status=status,
        request=RequestSnapshot(model="echo", input=items, instructions=instructions),
        response=ResponseSnapshot(
            output=[assistant_item(f"out_{response_id}", f"answer of {response_id}")],
        ),
    )


def item_ids(items: list[dict[str, object]]) -> list[object]:
    return [item["id"] for item in items]
