"""The README's and docs' code blocks, links and headings, read as the tests use them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOT_RUN = re.compile(r"^<!-- not run: .+ -->$")
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

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def markdown_files() -> list[Path]:
    """The README and every page under ``docs/``."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def examples(path: Path) -> list[Example]:
    """Every fenced block of ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[tuple[int, str, str, bool]] = []
    index = 0
    while index < len(lines):
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
        found.append((start, fence.group(1), "\n".join(lines[start + 1 : index]) + "\n", runs))
        index += 1
    blocks = []
    for number, (start, language, code, runs) in enumerate(found):
        prints = None
        following = found[number + 1] if number + 1 < len(found) else None
        if following is not None and following[1] == "text":
            between = lines[start + code.count("\n") + 2 : following[0]]
            if [line.strip() for line in between if line.strip()] == ["prints"]:
                prints = following[2]
        blocks.append(Example(path, start + 1, language, code, runs, prints))
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
