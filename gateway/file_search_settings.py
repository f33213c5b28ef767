"""``file_search`` in ``config.yaml``: the embeddings model the gateway's vector stores use,
the size of the files clients may upload, and how texts are sent to be embedded.

Unset (no ``embeddings_model``), the Files API still keeps files, but vector stores cannot
take any (a clear 400 says why) and a ``file_search`` tool stays a 400 on every provider
that does not run it natively: the gateway ships no embedding model of its own, since a
useful one is hundreds of megabytes and the operator already routes models.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FileSearchSettings(BaseModel):
    """The gateway's files, vector stores and their embeddings."""

    model_config = ConfigDict(extra="forbid")

    embeddings_model: str | None = None  # a name of ``models``, routed as chat models are
    dimensions: int | None = Field(default=None, ge=1, le=8192)  # asked of the model
    max_file_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    embedding_batch_size: int = Field(default=64, ge=1, le=2048)
    max_chunks_per_file: int = Field(default=20_000, ge=1)
    max_num_results: int = Field(default=10, ge=1, le=50)  # a search's default
    max_turn_seconds: float = Field(default=300.0, gt=0)

    @property
    def configured(self) -> bool:
        """Whether vector stores (and the ``file_search`` tool) can be served."""
        return self.embeddings_model is not None
