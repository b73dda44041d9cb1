"""The documentation as data, for the tests that hold the code to what the pages say.

``section("docs/reference.md", "Log lines")`` is the text under that heading, up to the next
heading of the same or a higher level; ``code_block`` and ``table_rows`` read what it holds.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pages() -> list[Path]:
    """README.md and every page of docs/, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def read(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def section(page: str, heading: str) -> str:
    """The text under ``heading`` (any level, matched whole) in ``page``, to the next heading of
    the same or a higher level; fenced code blocks are not searched for headings."""
    lines = read(page).splitlines()
    start = level = None
    fenced = False
    for number, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        found = re.match(r"^(#+) (.*)$", line)
        if not found:
            continue
        if start is None and found[2].strip() == heading:
            start, level = number + 1, len(found[1])
        elif start is not None and level is not None and len(found[1]) <= level:
            return "\n".join(lines[start:number]) + "\n"
    assert start is not None, f"{page} has no heading {heading!r}"
    return "\n".join(lines[start:]) + "\n"


def code_block(text: str) -> str:
    """The first fenced code block in ``text``, without its fences."""
    found = re.search(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    assert found, "no fenced code block"
    return found[1]


def table_rows(text: str) -> list[list[str]]:
    """Each row of the Markdown tables in ``text`` (header and separator rows left out), as its
    cells, stripped."""
    lines = text.splitlines()
    separator = re.compile(r"^\|[\s:|-]+\|$")
    rows = []
    for number, line in enumerate(lines):
        header = number + 1 < len(lines) and separator.match(lines[number + 1])
        if not line.startswith("|") or separator.match(line) or header:
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows
