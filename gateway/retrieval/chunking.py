"""A file's text cut into chunks of tokens (OpenAI's ``o200k_base``), each overlapping the
one before, as ``chunking_strategy`` asks: ``auto`` is ``static`` with OpenAI's defaults."""

from __future__ import annotations

from functools import cache
from typing import Any

from ..errors import invalid_request

DEFAULT_CHUNK_TOKENS = 800
DEFAULT_OVERLAP_TOKENS = 400
MIN_CHUNK_TOKENS, MAX_CHUNK_TOKENS = 100, 4096


def default_strategy() -> dict[str, Any]:
    return static_strategy(DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS)


def static_strategy(size: int, overlap: int) -> dict[str, Any]:
    return {
        "type": "static",
        "static": {"max_chunk_size_tokens": size, "chunk_overlap_tokens": overlap},
    }


def strategy_of(raw: Any, param: str = "chunking_strategy") -> dict[str, Any]:
    """The static strategy a request's ``chunking_strategy`` names; a 400 naming a bad field."""
    if raw is None:
        return default_strategy()
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind == "auto":
        return default_strategy()
    if kind != "static":
        raise invalid_request(
            f"Invalid '{param}.type': expected 'auto' or 'static'.", param=f"{param}.type"
        )
    static = raw.get("static")
    size = static.get("max_chunk_size_tokens") if isinstance(static, dict) else None
    overlap = static.get("chunk_overlap_tokens") if isinstance(static, dict) else None
    if type(size) is not int or not MIN_CHUNK_TOKENS <= size <= MAX_CHUNK_TOKENS:
        raise invalid_request(
            f"Invalid '{param}.static.max_chunk_size_tokens': expected an integer from "
            f"{MIN_CHUNK_TOKENS} to {MAX_CHUNK_TOKENS}.",
            param=f"{param}.static.max_chunk_size_tokens",
        )
    if type(overlap) is not int or not 0 <= overlap <= size // 2:
        raise invalid_request(
            f"Invalid '{param}.static.chunk_overlap_tokens': expected an integer from 0 "
            "to half of max_chunk_size_tokens.",
            param=f"{param}.static.chunk_overlap_tokens",
        )
    return static_strategy(size, overlap)


@cache
def _encoding() -> Any:
    import quicktok  # type: ignore[import-untyped]

    return quicktok.get_encoding("o200k_base")


def chunks(text: str, strategy: dict[str, Any]) -> list[str]:
    """``text`` in chunks of at most ``max_chunk_size_tokens``, each starting
    ``chunk_overlap_tokens`` before the end of the one before."""
    static = strategy["static"]
    size, overlap = static["max_chunk_size_tokens"], static["chunk_overlap_tokens"]
    encoding = _encoding()
    tokens = encoding.encode_ordinary(text)
    step = size - overlap
    found: list[str] = []
    for start in range(0, max(len(tokens) - overlap, 1), step):
        piece = encoding.decode(tokens[start : start + size]).strip()
        if piece:
            found.append(piece)
    return found
