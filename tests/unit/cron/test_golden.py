"""Every row of Quartz 2.3.2's own answers (data/quartz-golden-public.tsv, beside this file) must
hold.

Valid rows give exactly the listed fire times (or, where the row notes that Quartz departs from
the DST rules or has its nW-past-month-end bug, the answer the spec gives); invalid rows raise
CronSyntaxError naming one of the fields.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from mini_scheduler.cron import CronSyntaxError, parse

DATA = Path(__file__).resolve().parent / "data"
# QUARTZ_GOLDEN names another file of Quartz's answers, in the same columns, to check instead.
GOLDEN = Path(os.environ.get("QUARTZ_GOLDEN", DATA / "quartz-golden-public.tsv"))


@dataclass(frozen=True)
class Row:
    line: int
    statement: str
    zone: str
    start: datetime
    count: int
    answer: list[str] | None  # None: Quartz refuses the statement
    note: str


def _rows() -> list[Row]:
    if not GOLDEN.exists():
        pytest.fail(f"the golden file is missing: {GOLDEN} (it is part of the repository)")
    rows = []
    for number, raw in enumerate(GOLDEN.read_text(encoding="utf-8").splitlines(), start=1):
        if raw.startswith("#") or not raw.strip():
            continue
        columns = raw.split("\t")
        columns += [""] * (7 - len(columns))
        statement, zone, start, count, quartz, note, spec = columns[:7]
        chosen = spec if note else quartz
        answer = None if quartz.startswith("ERROR:") else [t for t in chosen.split(",") if t]
        rows.append(
            Row(number, statement, zone, datetime.fromisoformat(start), int(count), answer, note)
        )
    return rows


ROWS = _rows()


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("row", ROWS, ids=[f"L{r.line}:{r.statement}@{r.zone}" for r in ROWS])
def test_golden_row(row: Row) -> None:
    if row.answer is None:
        with pytest.raises(CronSyntaxError) as caught:
            parse(row.statement)
        assert caught.value.field in CronSyntaxError.FIELDS
        return
    expression = parse(row.statement)
    got: list[str] = []
    moment: datetime | None = row.start
    while len(got) < row.count:
        assert moment is not None
        moment = expression.next_after(moment, row.zone)
        if moment is None:
            break
        got.append(_iso(moment))
    # Rows whose count Quartz's own horizon lowered list fewer answers than we may find.
    assert got[: len(row.answer)] == row.answer
    if len(row.answer) < row.count:
        assert len(got) == len(row.answer), "Quartz found no more firings; neither may we"


def test_golden_file_is_complete() -> None:
    assert len(ROWS) > 1000
    assert sum(r.answer is None for r in ROWS) > 40
