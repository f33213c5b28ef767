"""The errors of WebSocket mode, and the ``error`` frame that carries each to the client.

OpenAI's frame is ``{"type": "error", "status": <HTTP status>, "error": {"message", "type",
"param", "code"}}``, with the ``stream_id`` of the lane it concerns when there is one.
"""

from __future__ import annotations

from typing import Any

from session import SessionError

from ..errors import APIError
from ..upstream import UnsupportedInput, UpstreamError
from .errors import from_session_error, from_upstream_error

MAX_QUEUED = 64  # frames waiting in one lane; past them the lane refuses more


def error_frame(error: APIError, lane: str | None = None) -> dict[str, Any]:
    """OpenAI's WebSocket ``error`` event: the HTTP status, the error, and its lane if any."""
    frame = {"type": "error", "status": error.status, **error.body()}
    if lane is not None:
        frame["stream_id"] = lane
    return frame


def api_error(error: Exception) -> APIError:
    """Any error a turn raises, as the :class:`APIError` its frame reports."""
    if isinstance(error, APIError):
        return error
    if isinstance(error, SessionError):
        return from_session_error(error)
    assert isinstance(error, UpstreamError | UnsupportedInput)
    return from_upstream_error(error)


def idle(seconds: float) -> APIError:
    """A connection that received no frame for ``seconds``."""
    return APIError(
        400,
        f"The WebSocket received no frame in {seconds:g} s (server.websocket_idle_seconds) "
        "and was closed. Open a new one to continue.",
        code="websocket_idle_timeout",
    )


def connection_limit(seconds: float) -> APIError:
    """A connection past its lifetime (OpenAI's message for its 60 minutes)."""
    span = f"{seconds / 60:g} minutes" if seconds % 60 == 0 else f"{seconds:g} s"
    return APIError(
        400,
        f"Responses websocket connection limit reached ({span}). "
        "Create a new websocket connection to continue.",
        code="websocket_connection_limit_reached",
    )


def stream_limit(most: int) -> APIError:
    """A connection that would name more lanes than it may."""
    return APIError(
        400,
        f"This WebSocket has named {most} stream_id lanes, its limit "
        "(server.websocket_max_streams). Reuse one, or open a new connection.",
        param="stream_id",
        code="websocket_stream_limit_reached",
    )


def queue_full(name: str) -> APIError:
    """A lane with :data:`MAX_QUEUED` frames already waiting."""
    return APIError(
        429,
        f"The lane {name!r} has {MAX_QUEUED} responses waiting, its limit. "
        "Wait for one to finish before sending more on it.",
        type="requests",
        param="stream_id",
        code="websocket_stream_queue_full",
    )
