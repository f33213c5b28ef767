"""The ``anthropic`` SDK's request types made strict, and its stream events, as pydantic
validators: what the fake Messages API checks every request and answer with.

A plain ``TypeAdapter(MessageCreateParams...)`` is not enough: its ``Iterable`` fields
validate lazily (a ``ValidatorIterator`` checks nothing until iterated) and its TypedDicts
ignore unknown keys. So each SDK TypedDict is rebuilt with ``extra="forbid"``,
``Iterable``/``Sequence`` become ``list``, the SDK-side conveniences (response models, file
objects) leave the unions, and unions told apart by a literal ``type``/``role`` become
tagged unions, whose errors name the tag as the real API's do.
"""

from __future__ import annotations

import collections.abc
import functools
import os
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pydantic
import typing_extensions
from anthropic.types import RawMessageStreamEvent
from anthropic.types.beta.beta_context_management_config_param import (
    BetaContextManagementConfigParam,
)
from anthropic.types.message_count_tokens_params import MessageCountTokensParams
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)

_DROP = object()  # a type that cannot come over the wire
_SEQUENCES = {collections.abc.Iterable, collections.abc.Sequence, list}
_REQUIRED = {typing.Required, typing_extensions.Required}
_WRAPPERS = _REQUIRED | {typing.NotRequired, typing_extensions.NotRequired}
_UNION: Any = Union
_ANNOTATED: Any = Annotated
_TYPED_DICT: Any = typing_extensions.TypedDict


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


def strict(tp: Any) -> Any:
    """``tp`` (an SDK request type) as pydantic must see it to validate like the API."""
    origin = get_origin(tp) or tp
    if isinstance(origin, type) and issubclass(origin, pydantic.BaseModel | typing.IO):
        return _DROP
    if origin is os.PathLike:
        return _DROP
    if _is_typeddict(tp):
        return _strict_typeddict(tp)
    if origin is Annotated:
        inner, *metadata = get_args(tp)
        converted = strict(inner)
        return converted if converted is _DROP else _ANNOTATED[(converted, *metadata)]
    if origin in _SEQUENCES:
        item = strict(get_args(tp)[0])
        return _DROP if item is _DROP else types.GenericAlias(list, (item,))
    if origin in (dict, collections.abc.Mapping):
        return types.GenericAlias(dict, tuple(strict(arg) for arg in get_args(tp)))
    if origin is Union:
        return _strict_union(get_args(tp))
    return tp


@functools.cache
def _strict_typeddict(cls: Any) -> Any:
    fields = {}
    for name, hint in typing.get_type_hints(cls, include_extras=True).items():
        # The SDK's string annotations hide Required[...] from ``__required_keys__``, which
        # then only tells each class's totality apart.
        required = name in cls.__required_keys__
        if get_origin(hint) in _WRAPPERS:
            required, hint = get_origin(hint) in _REQUIRED, get_args(hint)[0]
        wrapper = typing_extensions.Required if required else typing_extensions.NotRequired
        fields[name] = wrapper[strict(hint)]
    made = _TYPED_DICT(cls.__name__, fields)
    made.__pydantic_config__ = pydantic.ConfigDict(extra="forbid")
    return made


def _strict_union(args: tuple[Any, ...]) -> Any:
    members = [m for m in map(strict, args) if m is not _DROP]
    dicts = [m for m in members if _is_typeddict(m)]
    if len(dicts) > 1 and (tagged := _tagged(dicts)) is not None:
        members = [*(m for m in members if not _is_typeddict(m)), tagged]
    if not members:
        return _DROP
    return members[0] if len(members) == 1 else _UNION[tuple(members)]


def _tagged(dicts: list[Any]) -> Any:
    """``dicts`` as a union tagged by their literal ``type`` (or ``role``), else None. One
    member may leave the key out (a custom tool's optional ``"type": "custom"``)."""
    for key in ("type", "role"):
        tags: dict[str, str] = {}  # each literal value -> its member's tag
        labelled, default = [], None
        for member in dicts:
            values = _literals(typing.get_type_hints(member).get(key))
            if not values or tags.keys() & set(values):
                break
            tags |= dict.fromkeys(values, values[0])
            labelled.append(Annotated[member, pydantic.Tag(values[0])])
            if key not in member.__required_keys__:
                default = values[0] if default is None else ""
        else:
            if default != "":
                return _ANNOTATED[
                    _UNION[tuple(labelled)], pydantic.Discriminator(_picker(key, tags, default))
                ]
    return None


def _literals(hint: Any) -> tuple[str, ...]:
    """The strings of ``Literal[...]`` or ``Optional[Literal[...]]``, else ()."""
    if get_origin(hint) is Union:
        hint = next((a for a in get_args(hint) if a is not type(None)), None)
    values = get_args(hint) if get_origin(hint) is Literal else ()
    return values if all(isinstance(v, str) for v in values) else ()


def _picker(key: str, tags: dict[str, str], default: str | None) -> Callable[[Any], Any]:
    def pick(value: Any) -> Any:
        tag = (value.get(key) or default) if isinstance(value, dict) else None
        return tags.get(tag, tag) if isinstance(tag, str) else None

    return pick


CREATE = pydantic.TypeAdapter[Any](strict(MessageCreateParamsNonStreaming))
CREATE_STREAMING = pydantic.TypeAdapter[Any](strict(MessageCreateParamsStreaming))
COUNT = pydantic.TypeAdapter[Any](strict(MessageCountTokensParams))
# A beta field, taken with its ``anthropic-beta`` header only.
CONTEXT_MANAGEMENT = pydantic.TypeAdapter[Any](strict(BetaContextManagementConfigParam))
EVENT = pydantic.TypeAdapter[Any](RawMessageStreamEvent)


class _ErrorBody(typing_extensions.TypedDict):
    type: str
    message: str


@pydantic.with_config(pydantic.ConfigDict(extra="forbid"))
class _ErrorEvent(typing_extensions.TypedDict):
    type: Literal["error"]
    error: _ErrorBody
    request_id: typing_extensions.NotRequired[str | None]


ERROR_EVENT = pydantic.TypeAdapter[Any](_ErrorEvent)
