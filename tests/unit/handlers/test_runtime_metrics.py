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
        _runtime.flush()  # nothing left for the next test, whatever this one did
        capsys.readouterr()
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


def _firing_line(**more: Any) -> Any:
    """A firing's own record as the recorder logs a run's end, through the handlers' filter."""
    import logging

    from mini_scheduler.model import log_keys

    record = logging.LogRecord(
        "mini_scheduler.recorder", logging.INFO, __file__, 1, "end", (), None
    )
    record.__dict__.update(log_keys("job", "job@2026-11-30T14:00:00Z", named=True, **more))
    record.__dict__.update(function_request_id="req", cold_start=False)
    assert _runtime.FiringLines().filter(record)
    return record


def test_a_firing_s_line_goes_without_the_invocation_s_keys(emf: None) -> None:
    record = _firing_line()
    assert (record.function_request_id, record.cold_start) == (None, None)
    assert not hasattr(record, "job") and not hasattr(record, "firingId")
    assert "firingLine" not in record.__dict__  # the mark is not written
    assert "_aws" not in record.__dict__  # nothing carried unless asked


def test_a_firing_s_line_carries_the_counts_once_asked(
    emf: None, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = _runtime.EmfMetrics()
    metrics.add(m.RUNS_SUCCEEDED)
    metrics.add(m.RUNS_FAILED_FINAL, dimensions={m.JOB: "export"})
    _runtime.carry_metrics()
    metrics.add(m.RUNS_SUCCEEDED)  # counted before the line is written: carried too
    record = _firing_line()
    assert record.RunsSucceeded == [2.0]
    (directive,) = record._aws["CloudWatchMetrics"]
    assert directive["Metrics"] == [
        {"Name": m.RUNS_SUCCEEDED, "Unit": "Count"},
        {"Name": m.RUNS_FAILED_FINAL, "Unit": "Count"},  # the region's total
    ]
    assert record.RunsFailedFinal == [1.0]
    assert (record.Environment, record.Region, record.service) == (
        "prod",
        "us-east-1",
        "mini-scheduler",
    )
    assert "_aws" not in _firing_line().__dict__  # once
    _runtime.flush()  # what the line did not carry: the series by Job, on a line of its own
    found = _series(capsys.readouterr().out)
    base = (("Environment", "prod"), ("Region", "us-east-1"), ("service", "mini-scheduler"))
    assert found == {(m.RUNS_FAILED_FINAL, (*base, ("Job", "export"))): [1.0]}


def test_counts_no_line_carried_are_flushed_and_the_ask_is_forgotten(
    emf: None, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics = _runtime.EmfMetrics()
    _runtime.carry_metrics()
    metrics.add(m.RUNS_FAILED)  # a failure's end: no firing's line
    _runtime.flush()
    assert set(_series(capsys.readouterr().out)) == {
        (
            m.RUNS_FAILED,
            (("Environment", "prod"), ("Region", "us-east-1"), ("service", "mini-scheduler")),
        )
    }
    metrics.add(m.RUNS_SUCCEEDED)  # the next invocation did not ask
    assert "_aws" not in _firing_line().__dict__
    _runtime.flush()
    capsys.readouterr()
