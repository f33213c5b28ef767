"""The text of an uploaded file, by its kind: PDF through ``pypdf``, HTML through the
standard library's parser, JSON checked by ``json``, and plain text, Markdown and source
code decoded as UTF-8. A file whose text cannot be read fails with a reason."""

from __future__ import annotations

import io
import json
import logging
from html.parser import HTMLParser
from pathlib import PurePosixPath

logger = logging.getLogger(__name__)

_SKIPPED_TAGS = frozenset({"script", "style", "head", "template", "noscript"})
_BLOCK_TAGS = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "pre"}
)


class Unreadable(Exception):
    """A file whose text cannot be had; ``code`` is OpenAI's ``last_error.code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS and self._skipping:
            self._skipping -= 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _decoded(content: bytes, filename: str) -> str:
    if b"\x00" in content:
        raise Unreadable("unsupported_file", f"The file '{filename}' is binary, not text.")
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unreadable(
            "unsupported_file", f"The file '{filename}' is not text in UTF-8."
        ) from None


def _pdf(content: bytes, filename: str) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(content))
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as error:
        raise Unreadable("invalid_file", f"The PDF '{filename}' cannot be read: {error}.") from None


def _html(text: str) -> str:
    parser = _Text()
    parser.feed(text)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def text_of(content: bytes, filename: str) -> str:
    """The text of ``content``, read as ``filename``'s kind says; :class:`Unreadable`
    when there is none to read."""
    suffix = PurePosixPath(filename.lower()).suffix
    if suffix == ".pdf" or content.startswith(b"%PDF-"):
        text = _pdf(content, filename)
    else:
        text = _decoded(content, filename)
        if suffix in (".html", ".htm", ".xhtml"):
            text = _html(text)
        elif suffix == ".json":
            try:
                json.loads(text)
            except ValueError as error:
                raise Unreadable(
                    "invalid_file", f"The JSON '{filename}' is invalid: {error}."
                ) from None
    if not text.strip():
        raise Unreadable("invalid_file", f"The file '{filename}' holds no text.")
    return text
