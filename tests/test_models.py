"""Records built from values validated already match what pydantic would build."""

from __future__ import annotations

from typing import Any

import pytest

from session import RequestSnapshot, ResponseSnapshot, StoredResponse, trusted

pytestmark = [pytest.mark.unit]


def values() -> dict[str, Any]:
    request = RequestSnapshot.model_validate({"model": "m", "input": "hi", "temperature": 0.5})
    return {
        "id": "resp_1",
        "previous_response_id": None,
        "conversation_id": "conv_1",
        "project": "p",
        "created_at": 1.5,
        "completed_at": None,
        "status": "in_progress",
        "request": trusted(RequestSnapshot, dict(request.__dict__)),
        "response": ResponseSnapshot(),
        "metadata": {"user": "u"},
        "instance_id": "gw_1",
        "timeline": None,
    }


def test_trusted_equals_model_construct_and_validates_back() -> None:
    given = values()
    built = trusted(StoredResponse, dict(given))
    constructed = StoredResponse.model_construct(**given)
    assert built == constructed
    assert built.model_fields_set == constructed.model_fields_set == set(given)
    assert built.model_dump() == constructed.model_dump()
    assert StoredResponse.model_validate(built.model_dump()) == built
    assert built.request.temperature == 0.5 and built.request.input[0]["role"] == "user"


def test_a_copy_with_changes_leaves_the_trusted_original_alone() -> None:
    built = trusted(StoredResponse, values())
    done = built.model_copy(update={"status": "completed", "completed_at": 2.0})
    assert (done.status, done.completed_at) == ("completed", 2.0)
    assert (built.status, built.completed_at) == ("in_progress", None)
