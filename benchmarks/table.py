"""The one table ``make bench`` prints: every figure beside a baseline measured in the same run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HEADERS = ("#", "figure", "value", "baseline (same run)", "ratio", "target", "met")


@dataclass(frozen=True, slots=True)
class Row:
    section: str
    figure: str
    value: str
    baseline: str
    ratio: str = ""
    target: str = ""
    met: bool | None = None  # None: no target, a person judges


def ratio(value: float, baseline: float, *, faster: bool = False, digits: int = 1) -> str:
    """``value / baseline`` as ``1.3x``; ``faster``: ``baseline / value`` as ``4.0x faster``."""
    if faster:
        return f"{baseline / value:.{digits}f}x faster" if value > 0 else "-"
    return f"{value / baseline:.{digits}f}x" if baseline > 0 else "-"


def seconds(value: float) -> str:
    if value >= 100:
        return f"{value:.0f} s"
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1000:.0f} ms" if value >= 0.01 else f"{value * 1000:.1f} ms"


def dollars(value: float) -> str:
    if value >= 100:
        return f"${value:,.0f}"
    if value >= 1:
        return f"${value:.2f}"
    return f"${value:.3f}" if value >= 0.001 else f"${value:.4f}"


def render(rows: Sequence[Row]) -> str:
    cells = [
        (
            r.section,
            r.figure,
            r.value,
            r.baseline,
            r.ratio,
            r.target,
            "" if r.met is None else ("yes" if r.met else "NO"),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(HEADERS)]

    def line(values: Sequence[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    out = [line(HEADERS), rule]
    previous = None
    for r, c in zip(rows, cells, strict=True):
        if previous is not None and r.section != previous:
            out.append(rule)
        out.append(line(c))
        previous = r.section
    return "\n".join(out)
