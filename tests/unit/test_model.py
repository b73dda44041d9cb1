"""Firings, their ids and their attempts: what every store keys a run by."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mini_scheduler.model import MAX_ATTEMPT, Firing, firing_from_id, payload

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
FIRINGS = [
    Firing("report", T0),
    Firing("report", T0, attempt=2),
    Firing("report", T0, attempt=MAX_ATTEMPT),
    Firing.manual_run("report", T0, "jane", {}, nonce="0a1b2c3d"),
    Firing.manual_run("report", T0, "jane", {}, nonce="0a1b2c3d").retry(),
]


@pytest.mark.parametrize("firing", FIRINGS, ids=lambda f: f.id)
def test_a_run_id_names_its_firing_and_attempt(firing: Firing) -> None:
    read = firing_from_id(firing.id)
    assert (read.job, read.scheduled, read.manual, read.nonce, read.attempt) == (
        firing.job,
        firing.scheduled,
        firing.manual,
        firing.nonce,
        firing.attempt,
    )
    assert firing_from_id(firing.firing_id).attempt == 1


def test_every_attempt_keeps_the_firing_id_the_target_sees() -> None:
    first = Firing("report", T0)
    second = first.retry()
    assert (first.id, second.id) == ("report@2026-11-30T14:00:00Z", "report@2026-11-30T14:00:00Z#2")
    assert second.firing_id == first.firing_id
    body = payload(second, {}, "us-east-1/prod")
    assert (body["firingId"], body["attempt"]) == (first.id, 2)
    assert payload(first, {}, "us-east-1/prod")["attempt"] == 1


def test_a_firing_s_attempts_sort_together_latest_first() -> None:
    """A job's history is its runs by sort key, newest first: the attempts of a firing stay
    together, the latest on top, and past the next firing's."""
    keys = [Firing("report", T0, attempt=n).sort_key for n in (1, 2, 3, 10, 11)] + [
        Firing("report", datetime(2026, 11, 30, 14, 1, tzinfo=UTC)).sort_key
    ]
    assert sorted(keys, reverse=True) == keys[::-1]


@pytest.mark.parametrize(
    "text",
    [
        "report@2026-11-30T14:00:00Z#1",
        "report@2026-11-30T14:00:00Z#0",
        "report@2026-11-30T14:00:00Z#02",
        "report@2026-11-30T14:00:00Z#100",
        "report@2026-11-30T14:00:00Z#",
        "report@2026-11-30T14:00:00Z#x",
    ],
)
def test_an_id_with_no_attempt_after_its_hash_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="attempt"):
        firing_from_id(text)


def test_no_attempt_follows_the_last() -> None:
    with pytest.raises(ValueError, match="no attempt follows"):
        Firing("report", T0, attempt=MAX_ATTEMPT).retry()
