"""What can go wrong with a provider before a turn's stream starts (and, raised by a
stream's reader, what breaks one after: a stream's adapter records its message).

Adapters raise these; ``gateway/errors.py`` alone decides their HTTP status and body.

UpstreamError                 a provider gave no usable answer
├── UpstreamUnreachable       connection refused, reset or closed, DNS, TLS
├── UpstreamTimeout           no connection, answer or stream data within its limit
├── UpstreamBusy              the connection pool stayed full past its wait
├── UpstreamAuthFailed        the provider refused the gateway's credentials
├── UpstreamRejected          any other HTTP error status from the provider
└── UpstreamInvalidResponse   a 2xx whose body is not a valid answer (or is too large)
UnsupportedInput              input the wire cannot express (the client's mistake)
"""

from __future__ import annotations

import re


class UpstreamError(Exception):
    """Base class; ``message`` is safe to show to clients (secrets already scrubbed) and
    says enough to act on: the provider, its ``host:port`` and what happened (see
    ``gateway/upstream/transport/http.py``)."""

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.message = message


class UpstreamUnreachable(UpstreamError):
    pass


class UpstreamTimeout(UpstreamError):
    pass


class UpstreamBusy(UpstreamError):
    pass


class UpstreamAuthFailed(UpstreamError):
    pass


class UpstreamInvalidResponse(UpstreamError):
    pass


class UpstreamRejected(UpstreamError):
    """The provider answered ``status``; its own ``type``, ``code`` and ``Retry-After``."""

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int,
        type: str | None = None,
        code: str | None = None,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(provider, message)
        self.status = status
        self.type = type
        self.code = code
        self.retry_after = retry_after


class MalformedAnswer(ValueError):
    """A provider answer whose shape is not that of its wire API (read as it came)."""


class UnsupportedInput(ValueError):
    """An input the chat wire cannot express; ``param`` names where it is."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
_OVERFLOW = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long"
    r"|input is too long|exceeds? the (model'?s? )?(maximum|limit)",
    re.IGNORECASE,
)


def is_context_overflow(error: UpstreamError) -> bool:
    """Whether the upstream refused the request for being longer than its context window."""
    if not isinstance(error, UpstreamRejected):
        return False
    if error.code == CONTEXT_LENGTH_EXCEEDED:
        return True
    return error.status in (400, 413, 422) and bool(_OVERFLOW.search(error.message))
