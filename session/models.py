"""Records kept by the session store."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .ids import new_item_id

Item = dict[str, Any]
ResponseStatus = Literal["completed", "incomplete", "in_progress", "queued", "failed", "cancelled"]
CONTINUABLE_STATUSES = frozenset({"completed", "incomplete"})


def _normalise_message(item: Item) -> None:
    text_part = "output_text" if item.get("role") == "assistant" else "input_text"
    content = item.get("content")
    if isinstance(content, str):
        item["content"] = [{"type": text_part, "text": content}]
    if text_part == "output_text" and isinstance(item.get("content"), list):
        item["content"] = [
            {**part, "annotations": part.get("annotations", [])}
            if isinstance(part, dict) and part.get("type") == "output_text"
            else part
            for part in item["content"]
        ]


def normalise_input(value: Any) -> list[Item]:
    """Turn a request's ``input`` into stored items, in the shapes OpenAI lists them.

    A string becomes one user message; message content becomes a list of parts; items get
    ``status: completed`` and, where they have none (or repeat one), a fresh ``id``, so
    every stored item can serve as a pagination cursor.
    """
    if value is None:
        return []
    if isinstance(value, str):
        value = [{"type": "message", "role": "user", "content": value}]
    items: list[Item] = []
    seen: set[str] = set()
    for raw in value:
        item = dict(raw)
        item.setdefault("type", "message")
        if item["type"] == "message":
            _normalise_message(item)
        if item["type"] in ("message", "function_call", "function_call_output", "reasoning"):
            item.setdefault("status", "completed")
        if not item.get("id") or item["id"] in seen:
            item["id"] = new_item_id(item["type"])
        seen.add(item["id"])
        items.append(item)
    return items


ModelT = TypeVar("ModelT", bound=BaseModel)


def trusted(model: type[ModelT], values: dict[str, Any]) -> ModelT:
    """``model`` holding ``values``, which are validated already and name every field.

    What ``model_construct`` makes of such values, without its pass over each field's
    aliases and defaults, which a turn's records paid four times; ``values`` becomes the
    instance's own dictionary.
    """
    instance = model.__new__(model)
    object.__setattr__(instance, "__dict__", values)
    object.__setattr__(instance, "__pydantic_fields_set__", set(values))
    object.__setattr__(instance, "__pydantic_extra__", None)
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


class RequestSnapshot(BaseModel):
    """One turn's request: its own input items (never the history) and its settings."""

    model_config = ConfigDict(extra="forbid")

    input: list[Item] = Field(default_factory=list)
    instructions: str | list[Item] | None = None
    model: str
    tools: list[Item] = Field(default_factory=list)
    tool_choice: str | Item = "auto"
    parallel_tool_calls: bool = True
    reasoning: Item | None = None
    text: Item | None = None
    truncation: str | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    top_logprobs: int | None = None
    include: list[str] | None = None
    service_tier: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    background: bool = False
    stream: bool = False
    metadata: dict[str, str] | None = None

    @field_validator("input", mode="before")
    @classmethod
    def _normalise_input(cls, value: Any) -> list[Item]:
        return normalise_input(value)


class ResponseSnapshot(BaseModel):
    """One turn's result as returned to the client."""

    model_config = ConfigDict(extra="forbid")

    output: list[Item] = Field(default_factory=list)
    usage: Item | None = None
    error: Item | None = None
    incomplete_details: Item | None = None


class StoredResponse(BaseModel):
    """A stored turn: its parent link, tenancy, status, request and response snapshots."""

    model_config = ConfigDict(extra="forbid")

    id: str
    previous_response_id: str | None = None
    conversation_id: str | None = None
    project: str = "default"
    created_at: float = Field(default_factory=time.time)
    completed_at: float | None = None
    status: ResponseStatus = "completed"
    request: RequestSnapshot
    response: ResponseSnapshot = Field(default_factory=ResponseSnapshot)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # The gateway instance that runs the turn: while it is unfinished, the turn fails
    # once that instance stops proving it is alive (see ``SessionStore.fail_orphaned``).
    instance_id: str | None = None
    # The steps the turn took, with their times (resolve, attempts, tool calls, saves),
    # for the console; ``None`` for a turn stored before they were kept.
    timeline: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class ChainTurn:
    """What chain resolution reads of one stored turn."""

    id: str
    previous_response_id: str | None
    status: str
    input: list[Item]
    output: list[Item]
    # How the turn was routed (``metadata.route``: the deployment and key that answered),
    # for the next turn to go where its prompt cache is.
    route: Item | None = None


@dataclass(frozen=True)
class ResolvedChain:
    """A chain's turns oldest first and the input items they contribute, in order.

    Plain data, not a validated model: a long chain holds many thousands of items and
    they were validated when stored.
    """

    turns: list[ChainTurn]
    items: list[Item]
    types: frozenset[str | None]  # every item's "type" (None: none given), to skip scans
    # Where it came from: "store" (walked), "cache" (kept whole), "extended" (a kept
    # chain of its parent, with the turns after it read).
    source: str = "store"


def item_types(items: list[Item]) -> frozenset[str | None]:
    return frozenset([item.get("type") for item in items])


class ItemPage(BaseModel):
    """One page of a cursor-paginated item list, in OpenAI's list shape."""

    object: Literal["list"] = "list"
    data: list[Item]
    first_id: str | None
    last_id: str | None
    has_more: bool

    @classmethod
    def of(cls, data: list[Item], has_more: bool) -> ItemPage:
        first, last = (data[0].get("id"), data[-1].get("id")) if data else (None, None)
        return cls(data=data, first_id=first, last_id=last, has_more=has_more)
