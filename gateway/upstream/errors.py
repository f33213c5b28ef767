"""What can go wrong with a provider before a turn's stream starts.

Adapters raise these; ``gateway/errors.py`` alone decides their HTTP status and body.

UpstreamError                 a provider gave no usable answer
├── UpstreamUnreachable       connection refused, reset, DNS, TLS
├── UpstreamTimeout           no complete answer within the deadline
├── UpstreamBusy              the connection pool stayed full past its wait
├── UpstreamAuthFailed        the provider refused the gateway's credentials
├── UpstreamRejected          any other HTTP error status from the provider
└── UpstreamInvalidResponse   a 2xx whose body is not a valid answer (or is too large)
UnsupportedInput              input the wire cannot express (the client's mistake)
"""

from __future__ import annotations


class UpstreamError(Exception):
    """Base class; ``message`` is safe to show to clients (secrets already scrubbed)."""

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
