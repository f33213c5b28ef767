"""``file_search`` run by the gateway for any model: the tool's options and function
(:mod:`.tool`), its items, citations and read-back (:mod:`.items`), the kind (:mod:`.kind`)."""

from __future__ import annotations

from .kind import FileSearch
from .tool import FILE_SEARCH_TYPES, Searcher, has_file_search

__all__ = ["FILE_SEARCH_TYPES", "FileSearch", "Searcher", "has_file_search"]
