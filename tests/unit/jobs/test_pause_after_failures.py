"""A job's ``pause_after_failures`` (issue 14, part 2): a whole number from 1 to 100, none by
default, and the exact text of each refusal."""

from __future__ import annotations

import pytest

from mini_scheduler.jobs import load
from mini_scheduler.jobs.model import MAX_PAUSE_AFTER_FAILURES
from tests.unit.jobs.helpers import errors, invalid, one, warnings


def test_never_by_default() -> None:
    assert one().jobs[0].pause_after_failures is None
    assert one(pause_after_failures=None).jobs[0].pause_after_failures is None
    assert MAX_PAUSE_AFTER_FAILURES == 100


@pytest.mark.parametrize("value", [1, 3, 100])
def test_valid(value: int) -> None:
    cron_file = one(pause_after_failures=value)
    assert cron_file.ok and cron_file.problems == ()
    job = cron_file.jobs[0]
    assert job.pause_after_failures == value
    assert job.failure_policy is not None
    assert job.failure_policy.as_record() == {"pause_after_failures": value}


def test_with_a_retry_the_run_keeps_both() -> None:
    job = one(pause_after_failures=3, retry={"retries": 2}).jobs[0]
    assert job.failure_policy is not None
    assert job.failure_policy.as_record() == {
        "retries": 2,
        "backoff": 60,
        "factor": 2.0,
        "max_backoff": 3600,
        "pause_after_failures": 3,
    }
    assert one().jobs[0].failure_policy is None


def test_in_yaml() -> None:
    cron_file = load(
        "jobs:\n"
        "  - name: nightly-export\n"
        "    cron: '0 0 2 * * ?'\n"
        "    service: mini-scheduler-export\n"
        "    pause_after_failures: 5\n"
    )
    assert cron_file.ok and cron_file.jobs[0].pause_after_failures == 5


RULE = "pause_after_failures must be a whole number from 1 to 100, not "


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(0, "0", id="zero"),
        pytest.param(-1, "-1", id="negative"),
        pytest.param(101, "101", id="101"),
        pytest.param(2.5, "2.5", id="float"),
        pytest.param(3.0, "3.0", id="whole-float"),
        pytest.param("3", "'3'", id="text"),
        pytest.param(True, "true", id="true"),
        pytest.param([3], "a list", id="list"),
        pytest.param({"failures": 3}, "a mapping", id="mapping"),
    ],
)
def test_invalid(value: object, shown: str) -> None:
    cron_file = one(pause_after_failures=value)
    assert cron_file.jobs == ()
    assert errors(cron_file) == [invalid(RULE + shown)]
    assert warnings(cron_file) == []


def test_its_reason_joins_the_entry_s_others_in_table_order() -> None:
    cron_file = one(retry={"retries": 0}, pause_after_failures=0, enabled="yes")
    assert errors(cron_file) == [
        invalid(
            "retry.retries must be a whole number from 1 to 20, not 0; "
            f"{RULE}0; enabled must be true or false, not 'yes'"
        )
    ]


@pytest.mark.parametrize("key", ["pause_after", "max_consecutive_failures"])
def test_a_likely_misspelling_is_named(key: str) -> None:
    cron_file = one(**{key: 3})
    assert cron_file.ok and cron_file.jobs[0].pause_after_failures is None
    assert warnings(cron_file) == [
        f"Job report key {key} ignored - did you mean pause_after_failures?"
    ]
