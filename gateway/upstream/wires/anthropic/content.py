"""Responses content parts -> Messages API content blocks, with no I/O.

Text parts become ``text`` blocks (those of whitespace alone left out: the API refuses
them), images and PDFs ``image`` and ``document`` blocks from a data URL or an https URL;
images and files go in user content (and tool outputs) only, as the API takes them.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import UnsupportedInput
from ...results import Item

_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_PDF = ("file", frozenset({"application/pdf"}))
_FILE_PARTS = frozenset({"input_image", "input_file"})
_MEDIA = frozenset({"image", "document"})
_DATA_URL = re.compile(r"^data:([\w.+/-]+);base64,(.*)$", re.DOTALL)


def _source(url: str, kind: str, media_types: frozenset[str], where: str) -> Item:
    matched = _DATA_URL.match(url)
    if matched is not None:
        media_type, data = matched.groups()
        if media_type not in media_types:
            raise UnsupportedInput(
                f"A {kind} of type '{media_type}' cannot be sent to an Anthropic upstream "
                f"(it takes {', '.join(sorted(media_types))}).",
                where,
            )
        return {"type": "base64", "media_type": media_type, "data": data}
    if url.startswith("https://"):
        return {"type": "url", "url": url}
    raise UnsupportedInput(
        f"A {kind} must be given as a data URL or an https URL for an Anthropic upstream.", where
    )


def cache_control(breakpoint: Any) -> Item:
    """A part's ``prompt_cache_breakpoint`` as a block's ``cache_control``: a lifetime asked
    for (OpenAI's ``30m`` or ``12h``, at least) is Anthropic's longest, ``1h``; none, its
    default (five minutes)."""
    asked = breakpoint.get("ttl") if isinstance(breakpoint, dict) else None
    return {"type": "ephemeral", "ttl": "1h"} if asked else {"type": "ephemeral"}


def _block(part: Any, where: str) -> Item | None:
    """One content part as a content block (marked as a cache breakpoint if the part is
    one); ``None`` for an empty text."""
    block = _plain_block(part, where)
    if block is not None and part.get("prompt_cache_breakpoint") is not None:
        block["cache_control"] = cache_control(part["prompt_cache_breakpoint"])
    return block


def _plain_block(part: Any, where: str) -> Item | None:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in _TEXT_PARTS or kind == "refusal":
        text = part.get("text") if kind != "refusal" else part.get("refusal")
        # The API refuses text blocks of whitespace alone; they say nothing.
        return {"type": "text", "text": text} if text and text.strip() else None
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        return {"type": "image", "source": _source(part["image_url"], "image", _IMAGE_TYPES, where)}
    if kind == "input_file" and isinstance(part.get("file_data"), str):
        document: Item = {"type": "document", "source": _source(part["file_data"], *_PDF, where)}
        if part.get("filename"):
            document["title"] = part["filename"]
        return document
    if kind == "input_file" and isinstance(part.get("file_url"), str):
        return {"type": "document", "source": _source(part["file_url"], *_PDF, where)}
    inline = " (files must be given inline or by URL)" if kind in _FILE_PARTS else ""
    raise UnsupportedInput(
        f"Content of type '{kind}' cannot be sent to an Anthropic upstream{inline}.", where
    )


def content_blocks(content: Any, where: str, role: str = "user") -> list[Item]:
    """Content as blocks; images and files are refused outside user content (and tool
    outputs), as the API takes them nowhere else."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list):
        return []
    blocks = []
    for n, part in enumerate(content):
        block = _block(part, f"{where}[{n}]")
        if block is not None and block["type"] in _MEDIA and role != "user":
            raise UnsupportedInput(
                f"An Anthropic upstream takes images and files only in user messages and "
                f"tool outputs, not in a {role} message.",
                f"{where}[{n}]",
            )
        if block is not None:
            blocks.append(block)
    return blocks
