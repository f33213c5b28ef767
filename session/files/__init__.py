"""Files and vector stores: what the gateway keeps of them, the :class:`FileStore` role a
backend implements, and the exact and hybrid search over their chunks."""

from __future__ import annotations

from .errors import FileObjectNotFound
from .filters import COMPARISONS, COMPOUNDS, matches
from .models import (
    Attributes,
    Chunk,
    FileBatch,
    FileCounts,
    FileStatus,
    Hit,
    SearchQuery,
    StoredFile,
    VectorStore,
    VectorStoreFile,
)
from .ranking import vector_bytes, words
from .store import FileStore

COMPARISONS_AND_COMPOUNDS = COMPARISONS | COMPOUNDS

__all__ = [
    "COMPARISONS",
    "COMPARISONS_AND_COMPOUNDS",
    "COMPOUNDS",
    "Attributes",
    "Chunk",
    "FileBatch",
    "FileCounts",
    "FileObjectNotFound",
    "FileStatus",
    "FileStore",
    "Hit",
    "SearchQuery",
    "StoredFile",
    "VectorStore",
    "VectorStoreFile",
    "matches",
    "vector_bytes",
    "words",
]
