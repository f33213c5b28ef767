"""Request bodies as JSON: decoded once, and refused before use when no store could keep them.

orjson refuses what is not JSON (``NaN``, ``Infinity``, lone surrogates, invalid UTF-8,
numbers out of range). Beyond that a body may not nest deeper than :data:`MAX_DEPTH`
nor hold NUL characters, which PostgreSQL cannot store.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import invalid_request

MAX_DEPTH = 64


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _children(value: Any) -> list[tuple[str | int, Any]]:
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list):
        return list(enumerate(value))
    return []


def _find_problem(body: dict[str, Any], check_nul: bool) -> tuple[str, str] | None:
    """The first (param, problem) in ``body``, walking containers breadth-first."""
    level: list[tuple[str, Any]] = [("", body)]
    depth = 1
    while level:
        following: list[tuple[str, Any]] = []
        for path, value in level:
            for key, child in _children(value):
                child_path = _path(path, key)
                if check_nul and isinstance(key, str) and "\x00" in key:
                    return path or key, "contains a NUL character in a key"
                if check_nul and isinstance(child, str) and "\x00" in child:
                    return child_path, "contains a NUL character"
                if isinstance(child, dict | list):
                    following.append((child_path, child))
        if following and depth >= MAX_DEPTH:
            return following[0][0], f"nests deeper than {MAX_DEPTH} levels"
        level = following
        depth += 1
    return None


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """Decode a request body that must be one JSON object; a 400 names what is wrong."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise invalid_request(
            f"We could not parse the JSON body of your request ({error}). "
            "The body must be valid JSON.",
            code="invalid_json",
        ) from None
    if not isinstance(body, dict):
        raise invalid_request("The request body must be a JSON object.", code="invalid_json")
    check_nul = b"\\u0000" in raw
    # Fewer brackets than the depth limit cannot nest past it: most bodies skip the walk.
    deep = raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
    if check_nul or deep:
        problem = _find_problem(body, check_nul)
        if problem is not None:
            param, what = problem
            raise invalid_request(
                f"Invalid value for '{param}': it {what}.", param=param, code="invalid_value"
            )
    return body
