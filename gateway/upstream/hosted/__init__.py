"""Tools the gateway runs for models that cannot, each a kind (:mod:`.kind`), run by one
loop (:mod:`.run`)."""

from __future__ import annotations

from .kind import Kind
from .run import HostedUpstream
from .wrap import with_hosted

__all__ = ["HostedUpstream", "Kind", "with_hosted"]
