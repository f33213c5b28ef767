"""``n`` choices from ``n`` turns: their answers (or chunk streams) as one ``chat.completion``
(or one stream of chunks), with no I/O.

The gateway's turn carries one answer on every wire (its record, usage, cost and any fallback
to another wire), so a request for ``n`` choices is ``n`` turns run at once, each metered and
stored as a turn of its own; their answers become the choices ``0`` to ``n - 1`` of one
completion under the first turn's id, with the usage of all of them summed.
"""

from __future__ import annotations

from session import Item

from .chunks import ChunkTranslator

MAX_CHOICES = 16  # turns run at once for one request


def summed_usage(usages: list[Item | None]) -> Item | None:
    """Chat usages added up, detail by detail (``None`` when no turn reported any)."""
    known = [usage for usage in usages if usage]
    if not known:
        return None
    total: Item = {}
    for usage in known:
        for key, value in usage.items():
            if isinstance(value, dict):
                inner = total.setdefault(key, {})
                for name, count in value.items():
                    inner[name] = inner.get(name, 0) + (count or 0)
            elif isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total


def merged_completion(completions: list[Item]) -> Item:
    """``n`` one-choice completions as one completion with ``n`` choices."""
    first = completions[0]
    choices = [{**done["choices"][0], "index": index} for index, done in enumerate(completions)]
    return {**first, "choices": choices, "usage": summed_usage([c["usage"] for c in completions])}


class ChoiceChunks:
    """The chunks of ``n`` streamed turns as one stream: feed it each turn's events with
    the turn's index; each chunk is said of that choice, under the first turn's id."""

    def __init__(self, count: int, model: str, *, include_usage: bool, logprobs: bool) -> None:
        self._include_usage = include_usage
        self._translators = [
            ChunkTranslator(model, include_usage=include_usage, logprobs=logprobs)
            for _ in range(count)
        ]
        self._id: str | None = None
        self._created = 0
        self._usages: list[Item | None] = []
        self._failed = False

    @property
    def ended(self) -> bool:
        """Every choice ended, or one failed (which ends the stream)."""
        return self._failed or all(translator.ended for translator in self._translators)

    def ended_choice(self, index: int) -> bool:
        return self._translators[index].ended

    def event(self, index: int, event: Item) -> list[Item]:
        """The chunks the ``index``-th turn's ``event`` makes."""
        if self._failed:
            return []
        made = []
        for chunk in self._translators[index].event(event):
            if "error" in chunk:
                self._failed = True
                return [chunk]
            if self._id is None:
                self._id, self._created = chunk["id"], chunk["created"]
            chunk = {**chunk, "id": self._id, "created": self._created}
            if not chunk["choices"]:  # a usage chunk: one, summed, once every choice ended
                self._usages.append(chunk.get("usage"))
                continue
            chunk["choices"] = [{**choice, "index": index} for choice in chunk["choices"]]
            made.append(chunk)
        if self._include_usage and self.ended and made:
            made.append(self._usage_chunk(made[-1]))
        return made

    def _usage_chunk(self, last: Item) -> Item:
        return {**last, "choices": [], "usage": summed_usage(self._usages)}
