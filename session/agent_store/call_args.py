"""A named call's arguments, checked against its operation's signature before any SQL runs.

Each operation's parameters (after ``project`` and ``namespace``, and but the one that
receives the store's clock) become the fields of a strict pydantic model: a value of another
type, an unknown argument or a missing one is a BadRequest naming it, the same on every
backend. Strings anywhere in the arguments must be storable (UTF-8, no NUL).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .errors import StoreError, bad_request
from .values import storable

STRICT = ConfigDict(strict=True, extra="forbid")
SKIPPED = ("project", "namespace")


def arguments_model(make: Callable[..., Any], clock: str | None) -> type[BaseModel]:
    """The model of the arguments a client gives ``make``."""
    hints = get_type_hints(make, include_extras=True)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(make).parameters.items():
        if name in SKIPPED or name == clock:
            continue
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (hints[name], default)
    model: type[BaseModel] = create_model(f"{make.__name__}_arguments", __config__=STRICT, **fields)
    return model


def _param(location: tuple[str | int, ...]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


def _unstorable(value: Any) -> bool:
    """Whether a string in ``value`` (a key or a leaf, at any depth) is not storable."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not storable(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False


def check_arguments(name: str, model: type[BaseModel], args: dict[str, Any]) -> None:
    """BadRequest naming the first argument of call ``name`` that ``model`` refuses."""
    for key, value in args.items():
        if _unstorable(value):
            raise bad_request(
                f"Invalid argument '{key}' of {name}: it holds a NUL character or text"
                " that is not UTF-8.",
                key,
            )
    try:
        model.model_validate(args)
    except ValidationError as error:
        raise _refusal(name, error) from None


def _refusal(name: str, error: ValidationError) -> StoreError:
    first = error.errors()[0]
    param = _param(tuple(first["loc"]))
    return bad_request(f"Invalid argument '{param}' of {name}: {first['msg']}.", param or None)
