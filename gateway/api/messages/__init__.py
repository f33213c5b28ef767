"""The Messages API (``POST /v1/messages``) as the gateway reads and answers it: a Messages
request into the gateway's own stateless Responses turn, its answer and stream back."""

from __future__ import annotations

from .body import MessagesBody, parse_messages_body
from .relay import RelayedStream, passed_answer
from .request import stop_cut, to_count_body, to_responses_body
from .response import to_message
from .stream import MessagesStream
from .thinking import ThinkingSeals

__all__ = [
    "MessagesBody",
    "MessagesStream",
    "RelayedStream",
    "ThinkingSeals",
    "parse_messages_body",
    "passed_answer",
    "stop_cut",
    "to_count_body",
    "to_message",
    "to_responses_body",
]
