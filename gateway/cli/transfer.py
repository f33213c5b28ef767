"""``gateway export`` and ``gateway import``: a store's turns and conversations as JSON lines.

One JSON object a line, each with a ``kind``: first the ``header`` (the format and its
version), then the store's sealing ``secret`` (unless the configuration sets it), then
project by project its ``conversation`` lines (items included) and its ``response`` lines
(every field of the stored turn), each oldest first, and last an ``end`` line that counts
them. Keys are sorted, so one store always exports the same bytes, whatever its backend.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from session import (
    Conversation,
    InvalidData,
    Item,
    SaveConflict,
    SessionError,
    SessionStore,
    StoredConversation,
    StoredResponse,
)

FORMAT = "responses-gateway-export"
VERSION = 1
HEADER = {"format": FORMAT, "kind": "header", "version": VERSION}
# The name the gateway keeps its generated sealing secret under (see gateway/edge/app.py).
SEALING_SECRET = "compaction"
_PAGE = 200


def encode(line: dict[str, Any]) -> bytes:
    """One line of the format: keys sorted at every depth, so equal records give equal bytes."""
    return orjson.dumps(line, option=orjson.OPT_SORT_KEYS) + b"\n"


def response_line(record: StoredResponse) -> dict[str, Any]:
    return {"kind": "response", **record.model_dump(mode="json")}


def conversation_line(stored: StoredConversation, items: list[Item]) -> dict[str, Any]:
    return {
        "kind": "conversation",
        **stored.conversation.model_dump(mode="json"),
        "updated_at": stored.updated_at,
        "items": items,
    }


@dataclass
class Counts:
    """How many lines of each kind went out, or came in."""

    conversations: int = 0
    responses: int = 0

    def line(self) -> dict[str, Any]:
        return {"kind": "end", "conversations": self.conversations, "responses": self.responses}


async def export(
    store: SessionStore, out: BinaryIO, project: str | None, sealing_secret: str | None
) -> Counts:
    """Write ``project``'s records (every project's without one) to ``out``."""
    counts = Counts()
    out.write(encode(HEADER))
    if sealing_secret is not None:
        out.write(encode({"kind": "secret", "name": SEALING_SECRET, "value": sealing_secret}))
    for name in [project] if project is not None else await store.projects():
        after: tuple[float, str] | None = None
        while kept := await store.list_conversations(name, after=after, limit=_PAGE):
            for stored in kept:
                conversation = stored.conversation
                items = await store.conversation_items(name, conversation.id)
                out.write(encode(conversation_line(stored, items)))
            counts.conversations += len(kept)
            after = (kept[-1].conversation.created_at, kept[-1].conversation.id)
        after = None
        while records := await store.list_responses(name, after=after, limit=_PAGE):
            for record in records:
                out.write(encode(response_line(record)))
            counts.responses += len(records)
            after = (records[-1].created_at, records[-1].id)
    out.write(encode(counts.line()))
    return counts


async def stored_sealing_secret(store: SessionStore) -> str:
    """The sealing secret the store keeps (made now, as a gateway would, if it has none)."""
    return await store.shared_secret(SEALING_SECRET, secrets.token_urlsafe(32))


# -- import ---------------------------------------------------------------------------------


class _ConversationLine(BaseModel):
    """A ``conversation`` line: every field required, items each with a distinct id."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    id: str = Field(min_length=1)
    project: str = Field(min_length=1)
    created_at: float
    updated_at: float
    metadata: dict[str, str]
    items: list[Item]

    @field_validator("items")
    @classmethod
    def _identified(cls, items: list[Item]) -> list[Item]:
        ids = [item.get("id") for item in items]
        if not all(isinstance(item_id, str) and item_id for item_id in ids):
            raise ValueError("every item needs an id")
        if len(set(ids)) != len(ids):
            raise ValueError("two items share an id")
        return items

    def stored(self) -> StoredConversation:
        conversation = Conversation(
            id=self.id, project=self.project, created_at=self.created_at, metadata=self.metadata
        )
        return StoredConversation(conversation, self.updated_at)


class Refused(Exception):
    """A line that cannot be imported; its message says why."""


def _reason(error: ValidationError) -> str:
    reasons = [
        f"{'.'.join(str(part) for part in problem['loc']) or 'line'}: {problem['msg']}"
        for problem in error.errors()[:3]
    ]
    more = len(error.errors()) - 3
    return "; ".join(reasons) + (f" (and {more} more)" if more > 0 else "")


def _response(fields: dict[str, Any]) -> StoredResponse:
    fields = {key: value for key, value in fields.items() if key != "kind"}
    # An export made before turns kept their timeline has none: the turn is shown without.
    missing = sorted(set(StoredResponse.model_fields) - set(fields) - {"timeline"})
    if missing:
        raise Refused(f"response {fields.get('id')!r}: missing {', '.join(missing)}")
    try:
        return StoredResponse.model_validate(fields)
    except ValidationError as error:
        raise Refused(f"response {fields.get('id')!r}: {_reason(error)}") from None
    except (TypeError, AttributeError):  # raised by a validator given a value of no shape
        raise Refused(
            f"response {fields.get('id')!r}: request.input: not a list of items"
        ) from None


def _conversation(fields: dict[str, Any]) -> _ConversationLine:
    try:
        return _ConversationLine.model_validate(fields)
    except ValidationError as error:
        raise Refused(f"conversation {fields.get('id')!r}: {_reason(error)}") from None


@dataclass
class Imported:
    """What an import did: records written, records skipped (their ids were taken), lines
    refused with their numbers, and whether the file ended with its ``end`` line."""

    written: Counts = field(default_factory=Counts)
    skipped: Counts = field(default_factory=Counts)
    seen: Counts = field(default_factory=Counts)
    problems: list[str] = field(default_factory=list)
    ended: bool = False


class Importer:
    """Reads lines of the format into a store, one record (and one transaction) at a time."""

    def __init__(self, store: SessionStore, configured_secret: str | None) -> None:
        self._store = store
        self._configured_secret = configured_secret
        self.result = Imported()

    async def run(self, lines: Iterable[bytes], source: str = "the file") -> Imported:
        """Import ``lines``, read from ``source`` (named in a refusal of its header)."""
        numbered = enumerate(lines, start=1)
        _check_header(next(numbered, (1, b""))[1], source)
        for number, raw in numbered:
            if not raw.strip():
                continue
            try:
                await self._line(raw)
            except Refused as refused:
                self.result.problems.append(f"line {number}: {refused}")
            except SessionError as error:
                raise Refused(
                    f"line {number}: {error.message} Stopped: the lines before it are imported;"
                    " importing the file again skips them."
                ) from None
        if not self.result.ended:
            self.result.problems.append("the file ends without its end line: it was cut short")
        return self.result

    async def _line(self, raw: bytes) -> None:
        fields = _decoded(raw)
        if not isinstance(fields, dict):
            raise Refused("not a JSON object")
        if self.result.ended:
            raise Refused("a line after the end line")
        kind = fields.get("kind")
        if kind == "response":
            self.result.seen.responses += 1
            await self._save(_response(fields))
        elif kind == "conversation":
            self.result.seen.conversations += 1
            await self._restore(_conversation(fields))
        elif kind == "secret":
            await self._secret(fields)
        elif kind == "end":
            self.result.ended = True
            if fields != self.result.seen.line():
                seen = self.result.seen
                raise Refused(
                    f"the end line counts {fields.get('conversations')} conversations and"
                    f" {fields.get('responses')} responses; the file holds"
                    f" {seen.conversations} and {seen.responses}"
                )
        else:
            raise Refused(f"unknown kind {kind!r}")

    async def _save(self, record: StoredResponse) -> None:
        try:
            await self._store.save(record)
        except SaveConflict:
            self.result.skipped.responses += 1
        except InvalidData as error:  # a value the database cannot hold: nothing written
            raise Refused(f"response {record.id!r}: {error.message}") from None
        else:
            self.result.written.responses += 1

    async def _restore(self, line: _ConversationLine) -> None:
        try:
            written = await self._store.restore_conversation(line.stored(), line.items)
        except InvalidData as error:  # refused whole, its items with it
            raise Refused(f"conversation {line.id!r}: {error.message}") from None
        if written:
            self.result.written.conversations += 1
        else:
            self.result.skipped.conversations += 1

    async def _secret(self, fields: dict[str, Any]) -> None:
        value = fields.get("value")
        if fields.get("name") != SEALING_SECRET or not isinstance(value, str) or not value:
            raise Refused(f"a secret line names {SEALING_SECRET!r} and holds a value")
        if self._configured_secret is not None:
            kept = self._configured_secret
            where = "the configuration's compaction.secret"
        else:
            kept = await self._store.shared_secret(SEALING_SECRET, value)
            where = "the store's own sealing secret"
        if kept != value:
            raise Refused(
                f"{where} differs from the exported store's: the compaction items and reasoning"
                " state sealed there will not open here (set compaction.secret to the exported"
                " store's secret, the value on this line, to open them)"
            )


def _check_header(raw: bytes, source: str) -> None:
    try:
        header = orjson.loads(raw)
    except orjson.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or (header.get("kind"), header.get("format")) != (
        "header",
        FORMAT,
    ):
        first = raw.decode(errors="replace").strip()
        found = f"its first line is {_shortened(first)}" if first else "it is empty"
        raise Refused(
            f"{source} has no export header, so nothing is imported: an export's first line"
            f" is {encode(HEADER).decode().strip()}; {found}"
        )
    if header.get("version") != VERSION:
        raise Refused(
            f"line 1: an export of version {header.get('version')!r}; this gateway reads"
            f" version {VERSION}"
        )


def _shortened(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


def _decoded(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise Refused(f"not JSON ({error})") from None
