"""The functions' metrics as CloudWatch reads them (EMF): a count added with dimensions is
written twice, the region's total and the series by those dimensions (RunsFailedFinal by Job,
which the runs-failed alarm groups by job)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mini_scheduler import metrics as m
from mini_scheduler.handlers import _runtime


@pytest.fixture
def emf(capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    saved = dict(_runtime.powertools_metrics.default_dimensions)
    _runtime.set_dimensions(Environment="prod", Region="us-east-1")
    capsys.readouterr()
    try:
        yield
    finally:
        _runtime.powertools_metrics.clear_default_dimensions()
        _runtime.powertools_metrics.set_default_dimensions(**saved)


def _series(out: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], Any]:
    """Each metric written: (name, its dimensions and their values) -> value."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}
    for line in out.splitlines():
        blob = json.loads(line)
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            for dimensions in directive["Dimensions"]:
                for metric in directive["Metrics"]:
                    key = tuple((d, blob[d]) for d in dimensions)
                    found[(metric["Name"], key)] = blob[metric["Name"]]
    return found


def test_a_final_failure_is_written_as_the_total_and_by_job(
    emf: None, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = _runtime.EmfMetrics()
    metrics.add(m.RUNS_FAILED_FINAL, dimensions={m.JOB: "export"})
    metrics.add(m.RUNS_FAILED_FINAL, dimensions={m.JOB: "export"})
    metrics.add(m.RUNS_FAILED_FINAL, dimensions={m.JOB: "digest"})
    metrics.add(m.TICKS)
    _runtime.flush()
    base = (("Environment", "prod"), ("Region", "us-east-1"), ("service", "mini-scheduler"))
    found = _series(capsys.readouterr().out)
    assert found == {
        (m.RUNS_FAILED_FINAL, base): [3.0],
        (m.TICKS, base): [1.0],
        (m.RUNS_FAILED_FINAL, (*base, ("Job", "export"))): [2.0],
        (m.RUNS_FAILED_FINAL, (*base, ("Job", "digest"))): [1.0],
    }
    _runtime.flush()  # nothing left over
    assert capsys.readouterr().out == ""
