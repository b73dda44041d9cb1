"""Issue 28's targets, one row each, gathered from the sections that judge them in this run.

Each row is its section's row (the same figure, baseline, ratio and target, from the same run),
named by the target's number in issue 28: 1 ``overlap: allow`` (CPU per firing, the wall time of
1,000 firings, requests per firing), 2 ``overlap: skip`` (the same three), 3 write units per
firing with full history, 4 the cost per million firings and the bytes logged per firing, 6 the
cold start, 8 the scale on paper (every check of section 8 met). Another module adds its own
with :func:`target` (7, the console's refresh).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from benchmarks.table import Row

SECTION = "issue 28"


def target(number: str, label: str, row: Row | None) -> Row | None:
    """``row`` as issue 28's target ``number``: its figures, under a short ``label``."""
    if row is None:
        return None
    return dataclasses.replace(row, section=SECTION, figure=f"{number} {label}")


def scale_row(rows: Sequence[Row]) -> Row | None:
    """Target 8: every check of section 8 met."""
    judged = [row for row in rows if row.met is not None]
    if not judged:
        return None
    met = sum(1 for row in judged if row.met)
    return Row(
        SECTION,
        "8 scale on paper, 1,000,000 firings a minute (section 8's checks)",
        f"{met} of {len(judged)} met",
        "section 8 says which" if met < len(judged) else "section 8",
        "",
        "all met",
        met == len(judged),
    )


def table(rows: Sequence[Row | None]) -> list[Row]:
    """The targets' rows, in the issue's order (by number; stable within one)."""
    kept = [row for row in rows if row is not None]
    return sorted(kept, key=lambda row: int(row.figure.split(" ", 1)[0].rstrip(".") or 0))
