"""The README's and docs' code blocks, links and headings, read as the tests use them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOT_RUN = re.compile(r"^<!-- not run: .+ -->$")
# The runnable examples after this line, up to the next heading of level 1 or 2, run one
# after the other on one fresh gateway (each may use what the ones before it made).
IN_ORDER = re.compile(r"^<!-- in order: ([\w-]+) -->$")
_HEADING = re.compile(r"^#{1,2} ")
# What a block shows of the block after it: a line "prints" before a ``text`` block (its
# output, exactly), or "answers" before a ``json`` block (the JSON it writes).
_SHOWN = {"prints": "text", "answers": "json"}
_FENCE = re.compile(r"^```(\S*)\s*$")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`]*`")


@dataclass(frozen=True)
class Example:
    """One fenced code block: where it is, its language and text, and what it prints."""

    path: Path
    line: int
    language: str
    code: str
    runs: bool  # no ``<!-- not run: why -->`` line just before it
    prints: str | None  # the ``text`` block after a line "prints", if any
    answers: str | None  # the ``json`` block after a line "answers", if any
    in_order: str | None  # the ``<!-- in order: NAME -->`` it runs under, if any

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def markdown_files() -> list[Path]:
    """The README and every page under ``docs/``."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def examples(path: Path) -> list[Example]:
    """Every fenced block of ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[tuple[int, str, str, bool, str | None]] = []
    index = 0
    in_order: str | None = None
    while index < len(lines):
        if _HEADING.match(lines[index]):
            in_order = None
        elif marker := IN_ORDER.match(lines[index].strip()):
            in_order = marker.group(1)
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        start = index
        index += 1
        while not lines[index].startswith("```"):
            index += 1
        before = [line for line in lines[:start] if line.strip()]
        runs = not (before and NOT_RUN.match(before[-1].strip()))
        code = "\n".join(lines[start + 1 : index]) + "\n"
        found.append((start, fence.group(1), code, runs, in_order))
        index += 1
    blocks = []
    for number, (start, language, code, runs, in_order) in enumerate(found):
        shown: dict[str, str] = {}
        following = found[number + 1] if number + 1 < len(found) else None
        if following is not None:
            between = lines[start + code.count("\n") + 2 : following[0]]
            said = [line.strip() for line in between if line.strip()]
            if len(said) == 1 and _SHOWN.get(said[0]) == following[1]:
                shown[said[0]] = following[2]
        prints, answers = shown.get("prints"), shown.get("answers")
        ordered = in_order if runs else None
        blocks.append(Example(path, start + 1, language, code, runs, prints, answers, ordered))
    return blocks


def prose(path: Path) -> str:
    """``path`` without its fenced blocks and code spans: what links can be in."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return _CODE_SPAN.sub("", text)


def links(path: Path) -> list[str]:
    """The targets of ``path``'s markdown links."""
    return _LINK.findall(prose(path))


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives ``path``'s headings."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    slugs = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        slugs.add(slug)
    return slugs


def code_spans(path: Path) -> set[str]:
    """The text of every inline code span of ``path``, backticks removed."""
    return {span.strip("`") for span in _CODE_SPAN.findall(path.read_text(encoding="utf-8"))}
