"""Golden files for each translation direction, from recorded Chat Completions traffic.

The translators are pure, so these tests need no server. Regenerate the expectations
after an intended change with ``UPDATE_GOLDEN=1 pytest tests/test_translation_golden.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.upstream.translation.output_builder import ToolName
from gateway.upstream.wires.chat.request import TranslatedInputs, to_chat_request
from gateway.upstream.wires.chat.response import ChatTranslator

pytestmark = [pytest.mark.unit]

GOLDEN = Path(__file__).parent / "golden"
_MINTED = re.compile(r"\b(msg|fc|rs|call)_[0-9a-f]{48}\b")


def stable_ids(value: Any) -> Any:
    """Replace minted random ids by ``<msg:1>``-style names in order of appearance."""
    names: dict[str, str] = {}

    def name(match: re.Match[str]) -> str:
        prefix = match.group(1)
        if match.group(0) not in names:
            count = sum(1 for n in names.values() if n.startswith(f"<{prefix}:")) + 1
            names[match.group(0)] = f"<{prefix}:{count}>"
        return names[match.group(0)]

    return json.loads(_MINTED.sub(name, json.dumps(value)))


def check(path: Path, key: str, actual: Any) -> None:
    document = json.loads(path.read_text())
    if os.environ.get("UPDATE_GOLDEN"):
        document[key] = actual
        path.write_text(json.dumps(document, indent=2) + "\n")
    assert key in document, f"run with UPDATE_GOLDEN=1 to record {path.name}:{key}"
    assert actual == document[key]


def translate_stream(document: dict[str, Any]) -> dict[str, Any]:
    names = {flat: ToolName(*pair) for flat, pair in document.get("tool_names", {}).items()}
    translator = ChatTranslator(names)
    events = [event for chunk in document["chunks"] for event in translator.chunk(chunk)]
    closing, result = translator.finish()
    translated: dict[str, Any] = stable_ids(
        {
            "events": events + closing,
            "result": {
                "status": result.status,
                "output": result.output,
                "usage": result.usage,
                "incomplete_details": result.incomplete_details,
            },
        }
    )
    return translated


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("chat_stream_*.json")))
def test_chat_stream_to_responses_events(name: str) -> None:
    path = GOLDEN / name
    check(path, "expected", translate_stream(json.loads(path.read_text())))


def test_chat_completion_to_responses_output() -> None:
    path = GOLDEN / "chat_response.json"
    actual = []
    for case in json.loads(path.read_text())["cases"]:
        translator = ChatTranslator()
        events = translator.completion(case["completion"])
        _, result = translator.finish()
        actual.append(
            stable_ids(
                {
                    "event_types": [e["type"] for e in events],
                    "status": result.status,
                    "output": result.output,
                    "usage": result.usage,
                    "incomplete_details": result.incomplete_details,
                }
            )
        )
    check(path, "expected", actual)


def test_responses_request_to_chat_request() -> None:
    path = GOLDEN / "chat_request.json"
    actual = []
    for case in json.loads(path.read_text())["cases"]:
        request = case["request"]
        chat = to_chat_request(request, model=request["model"], stream=case["stream"])
        actual.append(
            {
                "payload": chat.payload,
                "tool_names": {k: list(v.__dict__.values()) for k, v in chat.tool_names.items()},
            }
        )
    check(path, "expected", actual)


def test_stream_events_equal_the_non_streamed_output() -> None:
    """The same answer streamed or whole builds the same output items."""
    document = json.loads((GOLDEN / "chat_stream_tool_calls.json").read_text())
    streamed = translate_stream(document)["result"]["output"]
    message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": []}
    for chunk in document["chunks"]:
        for choice in chunk["choices"]:
            for call in choice["delta"].get("tool_calls", []):
                if "id" in call:
                    message["tool_calls"].append({**call, "function": dict(call["function"])})
                else:
                    message["tool_calls"][call["index"]]["function"]["arguments"] += call[
                        "function"
                    ]["arguments"]
    translator = ChatTranslator({"files__read": ToolName("read", "files")})
    translator.completion({"choices": [{"message": message, "finish_reason": "tool_calls"}]})
    whole = stable_ids(translator.finish()[1].output)
    assert whole == streamed


def test_a_request_continuing_an_earlier_one_is_translated_as_if_from_scratch() -> None:
    """Each golden input, sent whole and then grown item by item, through one memo: the
    same payload, and the same bytes upstream, as a translation from scratch."""
    translated = TranslatedInputs(max_entries=4, min_items=1)
    reused = 0
    for case in json.loads((GOLDEN / "chat_request.json").read_text())["cases"]:
        request = case["request"]
        items = request["input"] if isinstance(request["input"], list) else []
        for end in [*range(1, len(items) + 1), len(items)]:
            grown = {**request, "input": request["input"] if not items else items[:end]}
            alone = to_chat_request(grown, model=grown["model"], stream=case["stream"])
            shared = to_chat_request(
                grown, model=grown["model"], stream=case["stream"], translated=translated
            )
            assert shared.payload == alone.payload
            assert orjson.loads(b"".join(shared.encoded())) == alone.payload
            reused += shared.encoded_messages is not None
    assert reused > 0


def test_a_growing_chain_reuses_the_encoded_messages_of_its_last_turn() -> None:
    """Each turn's messages up to the model's last answer go upstream as bytes encoded by
    an earlier request; only the new ones are encoded (a tool call merged into the last
    kept message included)."""
    translated = TranslatedInputs(min_items=1)
    items: list[dict[str, Any]] = []
    for turn in range(6):
        items.append({"role": "user", "content": f"question {turn}"})
        if turn % 2:
            items.append({"type": "reasoning", "summary": [{"text": "thinking"}]})
        items.append({"type": "message", "role": "assistant", "content": f"answer {turn}"})
        if turn % 3 == 2:
            call = {"type": "function_call", "call_id": f"c{turn}", "name": "f", "arguments": "{}"}
            items += [call, {"type": "function_call_output", "call_id": f"c{turn}", "output": "ok"}]
        request = {"instructions": "Be brief.", "input": items}
        alone = to_chat_request(request, model="m", stream=True)
        shared = to_chat_request(request, model="m", stream=True, translated=translated)
        assert orjson.loads(b"".join(shared.encoded())) == alone.payload
        if turn:
            assert shared.encoded_messages is not None
            start, count, _ = shared.encoded_messages
            assert start == 1 and count >= 2 * turn  # after the system message


class CountedItem(dict[str, Any]):
    """An item that counts the deep comparisons made of it."""

    comparisons = 0

    def __eq__(self, other: object) -> bool:
        CountedItem.comparisons += 1
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


def test_the_longest_kept_context_is_compared_first() -> None:
    """A chain read again from the store holds equal, not identical, items: only the
    longest kept context is compared item by item, not every shorter one before it, and
    only once."""
    translated = TranslatedInputs(min_items=1)
    items: list[dict[str, Any]] = []
    for turn in range(12):
        items += [
            CountedItem(role="user", content=f"question {turn}"),
            CountedItem(type="message", role="assistant", content=f"answer {turn}"),
        ]
        to_chat_request({"input": items}, model="m", stream=False, translated=translated)
    CountedItem.comparisons = 0
    to_chat_request(
        {"input": [*items, {"role": "user", "content": "next"}]},
        model="m",
        stream=False,
        translated=translated,
    )
    assert CountedItem.comparisons <= 1  # the same objects: identity decides (but the last)
    reread = [CountedItem(item) for item in items]
    CountedItem.comparisons = 0
    chat = to_chat_request(
        {"input": [*reread, {"role": "user", "content": "next"}]},
        model="m",
        stream=False,
        translated=translated,
    )
    assert chat.encoded_messages is not None  # reused: equal items match
    assert CountedItem.comparisons <= len(items) + 1  # its last item, then one pass
    CountedItem.comparisons = 0
    to_chat_request(
        {"input": [*reread, {"role": "user", "content": "again"}]},
        model="m",
        stream=False,
        translated=translated,
    )
    assert CountedItem.comparisons <= 1  # the kept context now holds the objects read again


def test_a_tool_call_merged_into_a_kept_message_leaves_the_kept_one_unchanged() -> None:
    translated = TranslatedInputs(min_items=1)
    answer = {"type": "message", "role": "assistant", "content": "Let me look."}
    prefix = [{"role": "user", "content": "Weather?"}, answer]
    call = {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"}
    first = to_chat_request({"input": prefix}, model="m", stream=False, translated=translated)
    second = to_chat_request(
        {"input": [*prefix, call]}, model="m", stream=False, translated=translated
    )
    assert second.payload["messages"][-1]["tool_calls"][0]["id"] == "c1"
    again = to_chat_request({"input": prefix}, model="m", stream=False, translated=translated)
    assert again.payload == first.payload
    assert "tool_calls" not in again.payload["messages"][-1]
    for chat in (second, again):
        assert orjson.loads(b"".join(chat.encoded())) == chat.payload


def test_kept_translations_stay_within_their_item_budget() -> None:
    translated = TranslatedInputs(max_entries=8, max_items=10, min_items=1)
    for n in range(6):
        items = [
            {"role": "user" if i % 2 else "assistant", "content": f"{n}-{i}"} for i in range(5)
        ]
        to_chat_request({"input": items}, model="m", stream=False, translated=translated)
        assert 4 <= translated.kept_items() <= 10
