"""The context a request puts before the model: its history, then its own items.

Turns, token counts and compactions all read it through :func:`model_context`, so each
refuses the same input: a compaction item or reasoning state that was not sealed here for
the project, or a tool output whose call the context does not hold.
"""

from __future__ import annotations

from session import Item

from ..errors import invalid_request
from ..sealing import REASONING_PREFIX, Sealer
from .compaction import expand

_TOOL_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
    }
)


def model_context(
    sealer: Sealer,
    project: str,
    history: list[Item],
    own: list[Item],
    history_types: frozenset[str | None] | None = None,
) -> list[Item]:
    """``history`` then ``own``, compaction items opened (see :func:`expand`), every tool
    output of ``own`` checked against the calls before it."""
    items = expand(sealer, project, history, own, history_types)
    check_tool_outputs(items, len(items) - len(own))
    check_reasoning_state(sealer, project, own)
    return items


def check_reasoning_state(sealer: Sealer, project: str, own: list[Item]) -> None:
    """A 400 ``invalid_encrypted_content`` for a reasoning item of ``own`` whose state claims
    to be sealed by the gateway but does not open for ``project`` (tampered, or another's).

    Stored items were sealed here and are not checked again; a provider's own
    ``encrypted_content`` (not the gateway's) is its provider's to judge.
    """
    for index, item in enumerate(own):
        token = item.get("encrypted_content")
        if (
            item.get("type") == "reasoning"
            and isinstance(token, str)
            and token.startswith(REASONING_PREFIX)
            and sealer.open(project, token, REASONING_PREFIX) is None
        ):
            raise invalid_request(
                "The encrypted content of this reasoning item could not be verified.",
                param=f"input[{index}].encrypted_content",
                code="invalid_encrypted_content",
            )


def check_tool_outputs(items: list[Item], first_own: int) -> None:
    """A 400 naming ``input`` for a tool output of ``items[first_own:]`` that no earlier
    call answers, as OpenAI refuses it before the model is called.

    Only the request's own outputs are checked (the history's were, when they came), and
    a call is searched for from the output backwards: usually a few items away.
    """
    for index in range(max(first_own, 0), len(items)):
        item = items[index]
        if item.get("type") not in _TOOL_OUTPUTS:
            continue
        call_id = item.get("call_id")
        if not any(_is_call(items[before], call_id) for before in range(index - 1, -1, -1)):
            raise invalid_request(
                f"No tool call found for function call output with call_id {call_id}.",
                param="input",
            )


def _is_call(item: Item, call_id: object) -> bool:
    kind = item.get("type")
    return isinstance(kind, str) and kind.endswith("_call") and item.get("call_id") == call_id
