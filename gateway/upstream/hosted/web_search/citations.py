"""The ``url_citation`` annotations of an answer's text: each ``[n]`` marker naming the
n-th result of the turn's searches, and each result's URL written out in the text."""

from __future__ import annotations

import re

from ...results import Item
from .backends import Result

_MARKER = re.compile(r"\[(\d{1,4})\]")


def citations(text: str, results: list[Result]) -> list[Item]:
    """The annotations of ``text`` for ``results`` (numbered from 1), in text order."""
    found: list[tuple[int, int, Result]] = []
    for match in _MARKER.finditer(text):
        number = int(match.group(1))
        if 1 <= number <= len(results):
            found.append((match.start(), match.end(), results[number - 1]))
    seen: set[str] = set()
    for result in results:
        if result.url in seen:
            continue
        seen.add(result.url)
        start = text.find(result.url)
        while start != -1:
            end = start + len(result.url)
            # A URL only where it ends: not the start of a longer one.
            if not _continues(text, end):
                found.append((start, end, result))
            start = text.find(result.url, end)
    found.sort(key=lambda found_at: found_at[0])
    return [
        {
            "type": "url_citation",
            "start_index": start,
            "end_index": end,
            "url": result.url,
            "title": result.title,
        }
        for start, end, result in found
    ]


def _continues(text: str, end: int) -> bool:
    """Whether a URL ending at ``end`` goes on in ``text`` (a longer URL, not this one)."""
    if end >= len(text):
        return False
    after = text[end]
    if after in ".,;:!" and (end + 1 >= len(text) or not text[end + 1].isalnum()):
        return False  # punctuation that ends a sentence
    return after.isalnum() or after in "/-_.?=&#%+~"
