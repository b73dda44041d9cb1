"""Both Lambda handlers on bad input: any JSON value, and near misses of every sample event in
events/, against moto and DynamoDB Local (the integration tests' ``aws`` fixture).

Each call is judged by ``tests.system.fuzz.conftest.judge``: an answer within its bound; a rejection
is ``{"status": "rejected", "error": "..."}`` and leaves the state table's item count and the SSM
parameters as they were; no exception escapes (the documented infrastructure errors, an AWS service
or the cron file failing, cannot happen on the healthy emulators here). The state carries over from
one example to the next (ticks move the watermark, runs get closed), so later examples meet a
scheduler that has already done things.

Three kinds of input: any JSON value (``events.JSON``); near misses of the samples, one to three
changes each, the other function's samples included (``events.near_misses``); and a sweep that
puts each wrong value of ``events.field_variants`` (another type, out of range, empty, 3,000
characters, a lone surrogate, an instant past year 9999...) in every place of every sample event
of the function, one at a time, or leaves the key out. The random runs try 150 events per
function, and 600 in their ``slow`` variants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.system.fuzz.conftest import Judge
from tests.system.fuzz.events import (
    JSON,
    RECORDER_SAMPLES,
    TICKER_SAMPLES,
    field_sweep,
    near_misses,
)

pytestmark = pytest.mark.dynamodb_local

Invoke = Callable[[Any], dict[str, Any]]

DEFAULT = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(DEFAULT, max_examples=600)

EVERY_SAMPLE = TICKER_SAMPLES + RECORDER_SAMPLES
TICKER_EVENTS = st.one_of(JSON, near_misses(TICKER_SAMPLES), near_misses(EVERY_SAMPLE))
RECORDER_EVENTS = st.one_of(JSON, near_misses(RECORDER_SAMPLES), near_misses(EVERY_SAMPLE))


@DEFAULT
@given(event=TICKER_EVENTS)
def test_the_ticker_answers_any_event_clearly(
    judge: Judge, invoke_ticker: Invoke, event: Any
) -> None:
    judge(invoke_ticker, event)


@DEFAULT
@given(event=RECORDER_EVENTS)
def test_the_recorder_answers_any_event_clearly(
    judge: Judge, invoke_recorder: Invoke, event: Any
) -> None:
    judge(invoke_recorder, event)


@pytest.mark.slow
@SLOW
@given(event=TICKER_EVENTS)
def test_the_ticker_answers_any_event_clearly_at_length(
    judge: Judge, invoke_ticker: Invoke, event: Any
) -> None:
    judge(invoke_ticker, event)


@pytest.mark.slow
@SLOW
@given(event=RECORDER_EVENTS)
def test_the_recorder_answers_any_event_clearly_at_length(
    judge: Judge, invoke_recorder: Invoke, event: Any
) -> None:
    judge(invoke_recorder, event)


def _sweep(judge: Judge, invoke: Invoke, names: tuple[str, ...]) -> None:
    failures = []
    cases = field_sweep(names)
    for sample, where, event in cases:
        try:
            judge(invoke, event)
        except Exception as exc:
            failures.append(f"{sample} with {where}: {type(exc).__name__}: {str(exc)[:300]!r}")
    assert not failures, f"{len(failures)} of {len(cases)} events failed:\n" + "\n".join(failures)


def test_every_field_of_every_ticker_event_taken_wrong(judge: Judge, invoke_ticker: Invoke) -> None:
    _sweep(judge, invoke_ticker, TICKER_SAMPLES)


def test_every_field_of_every_recorder_event_taken_wrong(
    judge: Judge, invoke_recorder: Invoke
) -> None:
    _sweep(judge, invoke_recorder, RECORDER_SAMPLES)
