"""A configuration's problems in words: key paths, a suggestion for a misspelt key, the order
of the file they are in, and where a YAML document stops parsing."""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic_core import ErrorDetails

_JOINED = re.compile(r"; (?=\S+: )")  # "; " before the next problem's key path


def key_path(loc: tuple[int | str, ...]) -> str:
    """``auth.keys[0].key``: list indexes in brackets, as in ``substitute_env``'s paths."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def _shapes(annotation: Any, part: int | str) -> Iterator[Any]:
    """What the value at ``part`` of a value of type ``annotation`` may be."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        for member in get_args(annotation):
            yield from _shapes(member, part)
    elif origin is Annotated:
        yield from _shapes(get_args(annotation)[0], part)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, field in annotation.model_fields.items():
            if part in (name, field.alias):
                yield field.annotation
    elif origin is dict and isinstance(part, str):
        yield get_args(annotation)[1]
    elif origin is list and isinstance(part, int):
        yield get_args(annotation)[0]


def _keys_at(root: type[BaseModel], loc: tuple[int | str, ...]) -> set[str]:
    """The keys a mapping at ``loc`` of ``root``'s document may hold (none if not a model's)."""
    shapes: list[Any] = [root]
    for part in loc:
        shapes = [shape for each in shapes for shape in _shapes(each, part)]
    keys: set[str] = set()
    for shape in shapes:
        for model in _models(shape):
            keys.update(field.alias or name for name, field in model.model_fields.items())
    return keys


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, Annotated):
        for member in get_args(annotation)[: 1 if origin is Annotated else None]:
            yield from _models(member)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation


def _message(detail: ErrorDetails, root: type[BaseModel]) -> str:
    if detail["type"] == "extra_forbidden":
        *holder, key = detail["loc"]
        close = difflib.get_close_matches(str(key), sorted(_keys_at(root, tuple(holder))), n=1)
        return f"unknown key (did you mean {close[0]!r}?)" if close else "unknown key"
    if detail["type"] == "missing":
        return "required"
    return detail["msg"].removeprefix("Value error, ")


def _follows_from_unset(path: str, message: str, unset: list[str]) -> bool:
    """Whether the error at ``path`` is only the empty value an unset variable left there
    (on the key itself, or on the section holding it and naming the key)."""
    return any(
        name == path or (path and name.startswith(f"{path}.") and name[len(path) + 1 :] in message)
        for name in unset
    )


def describe(errors: list[ErrorDetails], unset: list[str], root: type[BaseModel]) -> list[str]:
    """One line per error of ``root``'s validation, ``path: message``; none for an error
    that only follows from an unset variable."""
    lines = []
    for detail in errors:
        path, message = key_path(detail["loc"]), _message(detail, root)
        if _follows_from_unset(path, message, unset):
            continue
        if path:
            lines.append(f"{path}: {message}")
        else:  # the whole configuration's checks name their keys, several joined by "; "
            lines += _JOINED.split(message)
    return lines


# -- the file --------------------------------------------------------------------------------


class YamlProblem(Exception):
    """A document that does not parse; the message names the file, its line and column."""


def read_yaml(text: str, path: Path | str) -> tuple[Any, dict[str, int]]:
    """The document in ``text`` and the line of each key path in it (``server.port``,
    ``auth.keys[0]``); raise :class:`YamlProblem` where it does not parse."""
    try:
        loader = yaml.SafeLoader(text)
        construct: Callable[[yaml.Node], Any] = loader.construct_document  # untyped in stubs
        node = loader.get_single_node()
        document = None if node is None else construct(node)
    except yaml.MarkedYAMLError as error:
        raise YamlProblem(_where(error, path)) from None
    except yaml.reader.ReaderError as error:  # a character YAML does not take
        line = text.count("\n", 0, error.position) + 1
        column = error.position - text.rfind("\n", 0, error.position)
        raise YamlProblem(
            f"{path}:{line}:{column}: not valid YAML: {error.reason} (#x{error.character:04x})"
        ) from None
    lines: dict[str, int] = {}
    if node is not None:
        _key_lines(node, "", lines)
    return document, lines


def _where(error: yaml.MarkedYAMLError, path: Path | str) -> str:
    mark, context = error.problem_mark, error.context_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    line = f"{where}: not valid YAML: {error.problem or error.context}"
    if error.context and error.problem and context is not None:
        line += f" ({error.context} at line {context.line + 1}, column {context.column + 1})"
    return line


def _key_lines(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = f"{path}.{key.value}" if path else str(key.value)
            lines.setdefault(child, key.start_mark.line + 1)
            _key_lines(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = f"{path}[{index}]"
            lines.setdefault(child, item.start_mark.line + 1)
            _key_lines(item, child, lines)


def in_file_order(problems: list[str], lines: Mapping[str, int]) -> list[str]:
    """``problems`` by the line of the key each names (the nearest key the file has, for one
    it lacks); those naming no key of the file last, in their order."""

    def line(problem: str) -> float:
        named = [
            path
            for path in lines
            if problem.startswith(path) and problem[len(path) : len(path) + 1] in (":", ".", "[")
        ]
        return lines[max(named, key=len)] if named else float("inf")

    return sorted(problems, key=line)
