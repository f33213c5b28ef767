"""The save policy: conflict checks a backend runs inside the transaction of the write."""

from __future__ import annotations

import enum
from typing import Final

from .errors import SaveConflict
from .models import StoredResponse


class _Unset(enum.Enum):
    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET
ExpectedParent = str | None | _Unset


def check_save(
    record: StoredResponse,
    existing: StoredResponse | None,
    *,
    overwrite: bool,
    expected_previous_response_id: ExpectedParent,
) -> None:
    """Raise :class:`SaveConflict` if writing ``record`` over ``existing`` is refused.

    1. ``expected_previous_response_id`` given (``None`` meaning "a first turn") and
       different from the record's parent;
    2. a record with this id exists and ``overwrite`` is not set;
    3. an overwrite would change the existing record's parent (cycles are born that way).
    """
    if expected_previous_response_id is not UNSET and (
        record.previous_response_id != expected_previous_response_id
    ):
        raise SaveConflict(
            record.id,
            f"expected previous_response_id {expected_previous_response_id!r}, "
            f"record has {record.previous_response_id!r}.",
        )
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
