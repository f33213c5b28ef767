"""Tools the gateway runs for models that cannot, each a kind (:mod:`.kind`), run by one
loop (:mod:`.run`); which kinds a turn needs: :mod:`.wrap` (imported apart: the kinds
import this package)."""

from __future__ import annotations

from .kind import Call, Kind, Turn
from .run import HostedUpstream

__all__ = ["Call", "HostedUpstream", "Kind", "Turn"]
