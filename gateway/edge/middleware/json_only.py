"""Refuse request bodies that are not JSON with HTTP 415.

Browsers send ``text/plain`` and form bodies across sites without asking first, and a
page's request without a body too: those are refused by origin
(:mod:`.allowed_origins`); this keeps the API to JSON for every client.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ...errors import APIError
from ..errors import error_response
from ..messages_errors import anthropic_error_response, speaks_messages

_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
_UPLOADS = frozenset({"/v1/files"})  # a file arrives as a form (origins are checked still)


def _is_json(media_type: str) -> bool:
    media_type = media_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or media_type.endswith("+json")


def _is_upload(path: str, media_type: str) -> bool:
    media_type = media_type.split(";", 1)[0].strip().lower()
    return path in _UPLOADS and media_type == "multipart/form-data"


class JSONOnlyMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _WITH_BODY:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        has_body = headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        if not has_body or _is_json(content_type) or _is_upload(scope["path"], content_type):
            await self.app(scope, receive, send)
            return
        error = APIError(
            415,
            f"Unsupported content type {content_type or '(none)'!r}: send 'application/json'.",
            code="unsupported_media_type",
        )
        answer = anthropic_error_response if speaks_messages(scope["path"]) else error_response
        await answer(error)(scope, receive, send)
