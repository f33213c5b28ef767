"""The save policy: conflict checks a backend runs inside the transaction of the write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .errors import SaveConflict
from .models import StoredResponse


class StoredTurn(Protocol):
    """What the policy reads of the record already stored under the id."""

    @property
    def previous_response_id(self) -> str | None: ...

    @property
    def status(self) -> str: ...


@dataclass(frozen=True)
class ExistingTurn:
    """The two columns a backend reads to check an overwrite."""

    previous_response_id: str | None
    status: str


def check_save(record: StoredResponse, existing: StoredTurn | None, *, overwrite: bool) -> None:
    """Raise :class:`SaveConflict` if writing ``record`` over ``existing`` is refused.

    1. a record with this id exists and ``overwrite`` is not set (two turns never share
       an id, so one never silently replaces the other);
    2. an overwrite would change the existing record's parent (cycles are born that way);
    3. an overwrite of a turn that has already finished: a finished turn is final.
    """
    if existing is None:
        return
    if not overwrite:
        raise SaveConflict(record.id, "a response with this id already exists.")
    if existing.previous_response_id != record.previous_response_id:
        raise SaveConflict(
            record.id,
            f"an overwrite cannot change previous_response_id from "
            f"{existing.previous_response_id!r} to {record.previous_response_id!r}.",
        )
    if existing.status not in ("in_progress", "queued"):
        raise SaveConflict(record.id, f"the response has already finished ({existing.status}).")
