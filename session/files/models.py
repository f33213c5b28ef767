"""What the gateway keeps of files and vector stores, and what a search asks and finds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Attributes = dict[str, str | float | bool]
FileStatus = Literal["in_progress", "completed", "cancelled", "failed"]


@dataclass(frozen=True)
class StoredFile:
    """An uploaded file (its bytes are kept apart, written in the same transaction)."""

    id: str
    project: str
    filename: str
    purpose: str
    bytes: int
    created_at: float
    expires_at: float | None = None


@dataclass(frozen=True)
class VectorStore:
    """A vector store; its file counts and size are read from its files."""

    id: str
    project: str
    name: str
    created_at: float
    last_active_at: float
    metadata: dict[str, str] = field(default_factory=dict)
    expires_after: dict[str, Any] | None = None  # ``{"anchor": "last_active_at", "days"}``

    @property
    def expires_at(self) -> float | None:
        if self.expires_after is None:
            return None
        return self.last_active_at + float(self.expires_after["days"]) * 86400


@dataclass(frozen=True)
class VectorStoreFile:
    """A file attached to a vector store, and how far its processing went."""

    store_id: str
    file_id: str
    project: str
    created_at: float
    status: FileStatus
    chunking: dict[str, Any]  # OpenAI's ``static`` chunking strategy object
    attributes: Attributes = field(default_factory=dict)
    last_error: dict[str, str] | None = None  # ``{"code", "message"}``
    usage_bytes: int = 0
    batch_id: str | None = None


@dataclass(frozen=True)
class FileBatch:
    """Files attached to a vector store together."""

    id: str
    store_id: str
    project: str
    created_at: float


@dataclass(frozen=True)
class FileCounts:
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0

    @property
    def total(self) -> int:
        return self.in_progress + self.completed + self.failed + self.cancelled

    def as_object(self) -> dict[str, int]:
        return {
            "in_progress": self.in_progress,
            "completed": self.completed,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "total": self.total,
        }


@dataclass(frozen=True)
class Chunk:
    """A piece of a file's text, and its embedding (float32 bytes, unit length)."""

    position: int
    text: str
    vector: bytes


@dataclass(frozen=True)
class SearchQuery:
    """One search of some vector stores: the query's text and vector, the attribute filter
    (OpenAI's comparison and compound filters), how many results, how they rank."""

    text: str
    vector: bytes
    limit: int = 10
    filters: dict[str, Any] | None = None
    score_threshold: float = 0.0
    embedding_weight: float = 1.0
    text_weight: float = 0.0  # above zero: hybrid search, full text fused with vectors


@dataclass(frozen=True)
class Hit:
    """A chunk found, with its file's name and attributes and its score (0 to 1)."""

    store_id: str
    file_id: str
    filename: str
    position: int
    text: str
    score: float
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate:
    """A chunk a backend read for ranking (its vector not yet compared)."""

    key: int  # unique among the candidates of one search
    store_id: str
    file_id: str
    filename: str
    position: int
    text: str
    vector: bytes
    attributes: Attributes
