"""``web_search`` run by the gateway for models that cannot search: the operator's search
backends (:mod:`.backends`), one search over them (:mod:`.search`), the kind the hosted
loop runs (:mod:`.kind`), its items, citations and read-back."""

from __future__ import annotations

from .history import holds_web_search
from .kind import WebSearch
from .tool import WEB_SEARCH_TYPES, has_web_search

__all__ = ["WEB_SEARCH_TYPES", "WebSearch", "has_web_search", "holds_web_search"]
