"""Validation of ``POST /v1/responses`` bodies into a typed request."""

from __future__ import annotations

import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator
from pydantic_core import ErrorDetails

from ..errors import APIError, invalid_request
from .json_body import parse_json_object
from .validation import (
    check_items,
    check_prompt_cache_options,
    check_reasoning,
    check_text,
    check_tool,
    check_tool_choice,
    check_tool_choice_target,
)

Body = TypeVar("Body", bound=BaseModel)

Includable = Literal[
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
]


# Union members pydantic names in an error's location; they are not part of the param.
_UNION_TAG = re.compile(r"^(str|int|float|bool|none|(dict|list|literal|function-\w+)\[.*\])$")


def param_path(location: tuple[int | str, ...]) -> str:
    """``("input", 0, "role")`` -> ``"input[0].role"``, OpenAI's way of naming a param."""
    path = ""
    for part in location:
        if isinstance(part, str) and _UNION_TAG.match(part):
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def check_metadata(cls: Any, value: dict[str, str] | None) -> dict[str, str] | None:
    """OpenAI's limits: at most 16 pairs, keys up to 64 characters, values up to 512."""
    if value is not None:
        if len(value) > 16:
            raise ValueError("at most 16 key-value pairs")
        if any(len(k) > 64 or len(v) > 512 for k, v in value.items()):
            raise ValueError("keys are at most 64 characters and values at most 512")
    return value


class CreateResponseBody(BaseModel):
    """The fields the gateway reads; any other top-level field is kept and passed on."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    input: str | list[Any] = Field(default_factory=list)
    instructions: str | list[Any] | None = None
    previous_response_id: str | None = None
    conversation: str | dict[str, Any] | None = None
    store: bool = True
    stream: bool = False
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    reasoning: dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    truncation: Literal["auto", "disabled"] | None = None
    max_output_tokens: int | None = Field(default=None, ge=16)
    max_tool_calls: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    include: list[Includable] | None = None
    service_tier: (
        Literal["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"] | None
    ) = None
    safety_identifier: str | None = Field(default=None, max_length=64)
    prompt_cache_key: str | None = Field(default=None, max_length=1024)
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    background: bool = False
    metadata: dict[str, str] | None = None
    user: str | None = Field(default=None, max_length=256)
    # The request as a client of another API sent it, for an upstream of that API: set by
    # that API's edge, never read from a body.
    _passthrough: dict[str, Any] | None = PrivateAttr(default=None)

    _metadata = field_validator("metadata")(check_metadata)

    @property
    def passthrough(self) -> dict[str, Any] | None:
        """The request as a client of another API sent it (see :meth:`pass_through`)."""
        return self._passthrough

    def pass_through(self, request: dict[str, Any]) -> None:
        """Send ``request`` as it came to an upstream that speaks its client's API; the
        other upstreams get this body's translation."""
        self._passthrough = request

    @field_validator("conversation")
    @classmethod
    def _conversation_id(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if isinstance(value, dict) and not isinstance(value.get("id"), str):
            raise ValueError("expected a conversation id or an object with an 'id' string")
        return value

    @property
    def conversation_id(self) -> str | None:
        if isinstance(self.conversation, dict):
            return str(self.conversation["id"])
        return self.conversation

    def extra_fields(self) -> dict[str, Any]:
        """Top-level fields the gateway does not read, as the client sent them."""
        return dict(self.model_extra or {})


_BOUNDS = {  # pydantic's error -> OpenAI's words, the sign, the limit's key, the code part
    "greater_than_equal": ("below minimum", ">=", "ge", "below_min"),
    "greater_than": ("below minimum", ">", "gt", "below_min"),
    "less_than_equal": ("above maximum", "<=", "le", "above_max"),
    "less_than": ("above maximum", "<", "lt", "above_max"),
}


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _described(detail: ErrorDetails, param: str | None) -> tuple[str, str]:
    """OpenAI's message and code for one pydantic error."""
    kind, value = detail["type"], detail.get("input")
    if kind == "missing":
        return f"Missing required parameter: '{param}'.", "missing_required_parameter"
    if kind in _BOUNDS:
        words, sign, key, code = _BOUNDS[kind]
        limit = (detail.get("ctx") or {}).get(key)
        number = "decimal" if isinstance(limit, float) else "integer"
        return (
            f"Invalid '{param}': {number} {words} value. "
            f"Expected a value {sign} {_number(limit)}, but got {value!r} instead.",
            f"{number}_{code}_value",
        )
    if kind == "string_too_long":
        limit = (detail.get("ctx") or {}).get("max_length")
        return (
            f"Invalid '{param}': string too long. Expected a string with maximum length "
            f"{limit}, but got a string with length {len(str(value))} instead.",
            "string_above_max_length",
        )
    if kind == "literal_error":
        expected = (detail.get("ctx") or {}).get("expected", "")
        return (
            f"Invalid value: {value!r}. Supported values are: {expected}.",
            "invalid_value",
        )
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"Invalid type for '{param}': {detail['msg'].lower()}.", "invalid_type"
    return f"Invalid value for '{param}': {detail['msg']}.", "invalid_value"


def validate_body(model: type[Body], raw: bytes) -> Body:
    """Validate a JSON body against ``model``; raise a 400 naming the first bad param."""
    try:
        return model.model_validate(parse_json_object(raw))
    except ValidationError as error:
        first = error.errors()[0]
        param = param_path(first["loc"]) if first["loc"] else None
        message, code = _described(first, param)
        raise APIError(400, message, param=param, code=code) from None


def check_id_prefix(value: str | None, prefix: str, param: str) -> None:
    """OpenAI's check of an id's kind: ``resp_…`` for a response, ``conv_…`` for a conversation."""
    if value is not None and not value.startswith(f"{prefix}_"):
        raise invalid_request(
            f"Invalid '{param}': '{value[:64]}'. Expected an ID that begins with '{prefix}'.",
            param=param,
            code="invalid_value",
        )


Create = TypeVar("Create", bound=CreateResponseBody)


def parse_create_body(raw: bytes) -> CreateResponseBody:
    """Validate a create-response body; raise a 400 :class:`APIError` naming the bad param."""
    return check_create_body(validate_body(CreateResponseBody, raw))


def check_create_body(parsed: Create) -> Create:
    """The checks of a create body pydantic's types do not make."""
    if isinstance(parsed.input, list):
        check_items(parsed.input, "input")
    if isinstance(parsed.instructions, list):
        check_items(parsed.instructions, "instructions")
    for index, tool in enumerate(parsed.tools):
        check_tool(tool, f"tools[{index}]")
    check_tool_choice(parsed.tool_choice)
    check_tool_choice_target(parsed.tool_choice, parsed.tools)
    check_text(parsed.text)
    check_reasoning(parsed.reasoning)
    check_prompt_cache_options((parsed.model_extra or {}).get("prompt_cache_options"))
    if parsed.background and not parsed.store:
        raise invalid_request(
            "Background responses need 'store': true (they are kept to be retrieved).",
            param="background",
            code="invalid_value",
        )
    if parsed.previous_response_id is not None and parsed.conversation is not None:
        raise invalid_request(
            "Parameters 'previous_response_id' and 'conversation' cannot be used together.",
            param="conversation",
            code="invalid_request",
        )
    check_id_prefix(parsed.previous_response_id, "resp", "previous_response_id")
    check_id_prefix(parsed.conversation_id, "conv", "conversation")
    return parsed


class CreateConversationBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    items: list[Any] = Field(default_factory=list, max_length=20)
    metadata: dict[str, str] | None = None

    _metadata = field_validator("metadata")(check_metadata)


class UpdateConversationBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    metadata: dict[str, str]

    _metadata = field_validator("metadata")(check_metadata)


class CreateItemsBody(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    items: list[Any] = Field(min_length=1, max_length=20)


class InputTokensBody(CreateResponseBody):
    """A create body, but the model may be left out (then counted with o200k here)."""

    model: str | None = Field(default=None, min_length=1)  # type: ignore[assignment]
