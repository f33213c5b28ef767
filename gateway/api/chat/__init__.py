"""The inbound Chat Completions API: ``POST /v1/chat/completions`` bodies validated and
translated into the gateway's own Responses-shaped turn, and the turn's answer (or its
stream events) translated back into a ``chat.completion`` (or its chunks). Pure: no I/O."""

from .body import ChatCompletionBody, parse_chat_body
from .choices import MAX_CHOICES, ChoiceChunks, merged_completion
from .chunks import ChunkTranslator
from .completion import chat_completion
from .request import ChatTurn, to_turn

__all__ = [
    "MAX_CHOICES",
    "ChatCompletionBody",
    "ChatTurn",
    "ChoiceChunks",
    "ChunkTranslator",
    "chat_completion",
    "merged_completion",
    "parse_chat_body",
    "to_turn",
]
