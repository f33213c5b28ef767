"""The TypeScript client (``store-ts/``) keeps to the Python Store's tables: which named calls
are safe to retry, and each error code's status. Its behaviour is tested by ``npm test``."""

from __future__ import annotations

import json
import re

import pytest

from session.agent_store.calls import CALLS
from session.agent_store.errors import STATUS

from .markdown_examples import REPO

pytestmark = [pytest.mark.unit]

SOURCE = REPO / "store-ts" / "src"


def test_the_client_retries_the_calls_the_store_says_are_safe_to_retry() -> None:
    text = (SOURCE / "client.ts").read_text()
    listed = re.search(r"const RETRIED_CALLS = new Set\(\[(.*?)\]\);", text, re.S)
    assert listed is not None
    retried = set(json.loads(f"[{listed.group(1).rstrip().rstrip(',')}]"))
    assert retried == {name for name, call in CALLS.items() if call.retried}


def test_the_client_maps_each_error_code_to_the_same_status() -> None:
    text = (SOURCE / "errors.ts").read_text()
    table = re.search(r"export const STATUS: Record<string, number> = \{(.*?)\};", text, re.S)
    assert table is not None
    pairs = dict(re.findall(r"(\w+): (\d+),", table.group(1)))
    assert {code: int(status) for code, status in pairs.items()} == STATUS
