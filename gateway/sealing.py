"""What the gateway hands a client to send back, sealed: readable and forgeable by no one else.

Three kinds of token carry state through a client: a ``compaction`` item's summary, a
``reasoning`` item's provider state (thinking blocks and their signatures, thought
signatures), and the signature of a thinking block ``/v1/messages`` made of another model's
reasoning. Each is sealed with AES-GCM under the gateway's key (``compaction.secret``, or
one generated and kept in the store), bound to the project, and marked with its kind's
prefix, so that a token of one kind or project never opens as another.
"""

from __future__ import annotations

import base64
import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

COMPACTION_PREFIX = "gwc1."
REASONING_PREFIX = "gwr1."
# A thinking block's signature the Messages edge hands out for a model that is not Claude.
THINKING_PREFIX = "gwt1."


class Sealer:
    """Seals text for one project and opens it again; nothing else can."""

    def __init__(self, secret: str) -> None:
        self._aead = AESGCM(hashlib.sha256(secret.encode()).digest())

    def seal(self, project: str, text: str, prefix: str = COMPACTION_PREFIX) -> str:
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, text.encode(), _bound(project, prefix))
        return prefix + base64.urlsafe_b64encode(nonce + sealed).decode()

    def open(self, project: str, token: str, prefix: str = COMPACTION_PREFIX) -> str | None:
        """The text; ``None`` unless ``token`` was sealed here for ``project`` as ``prefix``."""
        if not token.startswith(prefix):
            return None
        try:
            raw = base64.urlsafe_b64decode(token.removeprefix(prefix))
            return self._aead.decrypt(raw[:12], raw[12:], _bound(project, prefix)).decode()
        except (ValueError, InvalidTag):
            return None


def _bound(project: str, prefix: str) -> bytes:
    # Compaction tokens were sealed to the project alone before reasoning tokens existed.
    return (project if prefix == COMPACTION_PREFIX else prefix + project).encode()
