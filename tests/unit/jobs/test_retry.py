"""A job's ``retry`` (issue 14, part 1): the forms that load with their defaults, the exact text
of each refusal, the unknown-key warning, and the waits :meth:`Retry.delay` gives."""

from __future__ import annotations

from typing import Any

import pytest

from mini_scheduler.jobs import MAX_BACKOFF, MAX_RETRIES, Retry, load
from tests.unit.jobs.helpers import errors, invalid, one, warnings

# -- what loads -----------------------------------------------------------------------------------


def test_no_retry_by_default() -> None:
    assert one().jobs[0].retry is None
    assert one(retry=None).jobs[0].retry is None


def test_limits() -> None:
    assert (MAX_RETRIES, MAX_BACKOFF) == (20, 86400)


@pytest.mark.parametrize(
    ("retry", "expected"),
    [
        pytest.param({"retries": 3}, Retry(3, 60, 2.0, 3600), id="defaults"),
        pytest.param(
            {"retries": 5, "backoff": 10, "factor": 1.5, "max_backoff": 300},
            Retry(5, 10, 1.5, 300),
            id="every-key",
        ),
        pytest.param({"retries": 1, "factor": 3}, Retry(1, 60, 3.0, 3600), id="whole-factor"),
        pytest.param(
            {"retries": 2, "backoff": 0, "max_backoff": 0}, Retry(2, 0, 2.0, 0), id="no-wait"
        ),
        pytest.param({"retries": 2, "factor": 1}, Retry(2, 60, 1.0, 3600), id="constant"),
        pytest.param(
            {"retries": 20, "backoff": 86400, "factor": 10, "max_backoff": 86400},
            Retry(20, 86400, 10.0, 86400),
            id="highest",
        ),
        pytest.param({"retries": 2, "backoff": 3600}, Retry(2, 3600, 2.0, 3600), id="equal"),
        pytest.param(
            {"retries": 2, "backoff": None, "factor": None, "max_backoff": None},
            Retry(2, 60, 2.0, 3600),
            id="nulls-are-defaults",
        ),
    ],
)
def test_valid_retry(retry: dict[str, Any], expected: Retry) -> None:
    cron_file = one(retry=retry)
    assert cron_file.ok and cron_file.problems == ()
    retry = cron_file.jobs[0].retry
    assert retry == expected
    assert retry is not None and isinstance(retry.factor, float)


def test_retry_in_yaml() -> None:
    cron_file = load(
        "jobs:\n"
        "  - name: nightly-export\n"
        "    cron: '0 0 2 * * ?'\n"
        "    service: mini-scheduler-export\n"
        "    retry:\n"
        "      retries: 3\n"
        "      backoff: 60\n"
        "      factor: 2\n"
        "      max_backoff: 3600\n"
        "  - {name: b, cron: '0 0 2 * * ?', service: fn, retry: {retries: 2, factor: 1.5}}\n"
        "  - {name: c, cron: '0 0 2 * * ?', service: fn, retry:}\n"
    )
    assert cron_file.ok and cron_file.problems == ()
    assert [job.retry for job in cron_file.jobs] == [
        Retry(3, 60, 2.0, 3600),
        Retry(2, 60, 1.5, 3600),
        None,
    ]


def test_jobs_with_a_retry_are_hashable() -> None:
    job = one(retry={"retries": 3}).jobs[0]
    assert hash(job) == hash(one(retry={"retries": 3}).jobs[0])
    assert job != one(retry={"retries": 4}).jobs[0]


# -- what is refused ------------------------------------------------------------------------------

RETRIES = "retry.retries must be a whole number from 1 to 20, not "
BACKOFF = "retry.backoff must be a whole number of seconds from 0 to 86400, not "
FACTOR = "retry.factor must be a number from 1 to 10, not "
MAX = "retry.max_backoff must be a whole number of seconds from 0 to 86400, not "
NOT_A_MAPPING = "retry must be a mapping of retries, backoff, factor and max_backoff, not "


@pytest.mark.parametrize(
    ("retry", "reason"),
    [
        pytest.param(3, NOT_A_MAPPING + "3", id="number"),
        pytest.param(True, NOT_A_MAPPING + "true", id="true"),
        pytest.param(False, NOT_A_MAPPING + "false", id="false"),
        pytest.param("3 times", NOT_A_MAPPING + "'3 times'", id="text"),
        pytest.param([3], NOT_A_MAPPING + "a list", id="list"),
        pytest.param(
            {}, "missing retry.retries (the attempts after the first, 1 to 20)", id="empty"
        ),
        pytest.param(
            {"backoff": 10},
            "missing retry.retries (the attempts after the first, 1 to 20)",
            id="no-retries",
        ),
        pytest.param(
            {"retries": None},
            "missing retry.retries (the attempts after the first, 1 to 20)",
            id="null-retries",
        ),
        pytest.param({"retries": 0}, RETRIES + "0", id="retries-zero"),
        pytest.param({"retries": 21}, RETRIES + "21", id="retries-21"),
        pytest.param({"retries": -1}, RETRIES + "-1", id="retries-negative"),
        pytest.param({"retries": 2.5}, RETRIES + "2.5", id="retries-float"),
        pytest.param({"retries": 3.0}, RETRIES + "3.0", id="retries-whole-float"),
        pytest.param({"retries": "3"}, RETRIES + "'3'", id="retries-text"),
        pytest.param({"retries": True}, RETRIES + "true", id="retries-bool"),
        pytest.param({"retries": [3]}, RETRIES + "a list", id="retries-list"),
        pytest.param({"retries": 3, "backoff": -1}, BACKOFF + "-1", id="backoff-negative"),
        pytest.param({"retries": 3, "backoff": 86401}, BACKOFF + "86401", id="backoff-day"),
        pytest.param({"retries": 3, "backoff": 1.5}, BACKOFF + "1.5", id="backoff-float"),
        pytest.param({"retries": 3, "backoff": "60s"}, BACKOFF + "'60s'", id="backoff-text"),
        pytest.param({"retries": 3, "backoff": False}, BACKOFF + "false", id="backoff-bool"),
        pytest.param({"retries": 3, "factor": 0.5}, FACTOR + "0.5", id="factor-below-1"),
        pytest.param({"retries": 3, "factor": 0}, FACTOR + "0", id="factor-zero"),
        pytest.param({"retries": 3, "factor": 11}, FACTOR + "11", id="factor-11"),
        pytest.param({"retries": 3, "factor": 10.5}, FACTOR + "10.5", id="factor-float"),
        pytest.param({"retries": 3, "factor": "2"}, FACTOR + "'2'", id="factor-text"),
        pytest.param({"retries": 3, "factor": True}, FACTOR + "true", id="factor-bool"),
        pytest.param({"retries": 3, "max_backoff": -1}, MAX + "-1", id="max-negative"),
        pytest.param({"retries": 3, "max_backoff": 86401}, MAX + "86401", id="max-day"),
        pytest.param({"retries": 3, "max_backoff": 60.5}, MAX + "60.5", id="max-float"),
        pytest.param({"retries": 3, "max_backoff": {}}, MAX + "a mapping", id="max-mapping"),
        pytest.param(
            {"retries": 3, "backoff": 60, "max_backoff": 30},
            "retry.max_backoff must be at least retry.backoff (60), not 30",
            id="max-below-backoff",
        ),
        pytest.param(
            {"retries": 3, "max_backoff": 30},
            "retry.max_backoff must be at least retry.backoff (60), not 30",
            id="max-below-default-backoff",
        ),
        pytest.param(
            {"retries": 3, "backoff": 7200},
            "retry.max_backoff must be at least retry.backoff (7200), not the default 3600",
            id="backoff-above-default-max",
        ),
        pytest.param(
            {"retries": 0, "backoff": -1, "factor": "x", "max_backoff": True},
            f"{RETRIES}0; {BACKOFF}-1; {FACTOR}'x'; {MAX}true",
            id="every-key-wrong",
        ),
    ],
)
def test_invalid_retry(retry: object, reason: str) -> None:
    cron_file = one(retry=retry)
    assert cron_file.jobs == ()
    assert errors(cron_file) == [invalid(reason)]
    assert warnings(cron_file) == []


@pytest.mark.parametrize(("value", "shown"), [(".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf")])
def test_a_factor_that_is_not_a_finite_number(value: str, shown: str) -> None:
    cron_file = load(
        "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, "
        f"retry: {{retries: 3, factor: {value}}}}}\n"
    )
    assert errors(cron_file) == [invalid(FACTOR + shown, name="a")]


def test_retry_reasons_join_the_entry_s_others_in_table_order() -> None:
    cron_file = one(cron=None, timeout=0, retry={"retries": 0}, enabled="yes")
    assert errors(cron_file) == [
        invalid(
            "missing cron; timeout must be a whole number of seconds from 1 to 604800, not 0; "
            f"{RETRIES}0; enabled must be true or false, not 'yes'"
        )
    ]


# -- unknown keys ---------------------------------------------------------------------------------


def test_an_unknown_key_in_retry_warns_and_the_job_loads() -> None:
    cron_file = one(retry={"retries": 3, "backof": 10, "multiplier": 3, "colour": "blue"})
    assert cron_file.ok and cron_file.jobs[0].retry == Retry(3, 60, 2.0, 3600)
    assert warnings(cron_file) == [
        "Job report key retry.backof ignored - did you mean retry.backoff?",
        "Job report key retry.multiplier ignored - did you mean retry.factor?",
        "Job report key retry.colour ignored - the keys are retry.retries, retry.backoff, "
        "retry.factor, retry.max_backoff",
    ]


def test_an_unknown_key_in_retry_explains_a_missing_retries() -> None:
    cron_file = one(retry={"attempts": 3})
    assert [(p.level, p.message) for p in cron_file.problems] == [
        ("warning", "Job report key retry.attempts ignored - did you mean retry.retries?"),
        ("error", invalid("missing retry.retries (the attempts after the first, 1 to 20)")),
    ]


def test_keys_in_retry_are_shown_on_one_short_line() -> None:
    cron_file = load(
        "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, "
        'retry: {retries: 3, "x\\nERROR forged": 1, 7: 2}}\n'
    )
    assert warnings(cron_file) == [
        "Job a key retry.x\\nERROR forged ignored - the keys are retry.retries, retry.backoff, "
        "retry.factor, retry.max_backoff",
        "Job a key retry.7 ignored - the keys are retry.retries, retry.backoff, retry.factor, "
        "retry.max_backoff",
    ]


def test_retries_at_the_job_level_suggests_retry() -> None:
    cron_file = one(retries=3)
    assert cron_file.ok and cron_file.jobs[0].retry is None
    assert warnings(cron_file) == ["Job report key retries ignored - did you mean retry?"]


def test_a_key_written_twice_in_retry_is_invalid() -> None:
    cron_file = load(
        "jobs:\n  - name: a\n    cron: '0 0 9 * * ?'\n    service: fn\n"
        "    retry:\n      retries: 3\n      retries: 4\n"
    )
    assert errors(cron_file) == [invalid("key retries appears twice (lines 6 and 7)", name="a")]


# -- the waits ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retry", "delays"),
    [
        pytest.param(Retry(3, 60, 2.0, 3600), [60, 120, 240, None], id="defaults"),
        pytest.param(Retry(1, 60, 2.0, 3600), [60, None], id="one-retry"),
        pytest.param(
            Retry(6, 1000, 3.0, 5000), [1000, 3000, 5000, 5000, 5000, 5000, None], id="capped"
        ),
        pytest.param(Retry(3, 60, 2.0, 60), [60, 60, 60, None], id="cap-equals-backoff"),
        pytest.param(Retry(4, 5, 1.5, 3600), [5, 8, 11, 17, None], id="factor-1.5"),
        pytest.param(Retry(3, 3, 1.5, 3600), [3, 5, 7, None], id="halves-round-up"),
        pytest.param(Retry(3, 10, 1.1, 3600), [10, 11, 12, None], id="factor-1.1"),
        pytest.param(Retry(3, 60, 1.0, 3600), [60, 60, 60, None], id="constant"),
        pytest.param(Retry(2, 0, 2.0, 0), [0, 0, None], id="no-wait"),
        pytest.param(
            Retry(20, 86400, 10.0, 86400), [86400] * 20 + [None], id="highest-stays-capped"
        ),
        pytest.param(
            Retry(20, 1, 10.0, 86400),
            [1, 10, 100, 1000, 10000, *[86400] * 15, None],
            id="factor-10-reaches-the-cap",
        ),
    ],
)
def test_delay(retry: Retry, delays: list[int | None]) -> None:
    """Attempt n failed: the wait before attempt n + 1, for n = 1 .. retries + 1."""
    assert [retry.delay(attempt) for attempt in range(1, retry.retries + 2)] == delays


def test_delay_after_the_last_attempt_is_none() -> None:
    assert Retry(3).delay(4) is None and Retry(3).delay(99) is None


def test_delay_of_no_attempt_is_an_error() -> None:
    with pytest.raises(ValueError, match="attempt 0"):
        Retry(3).delay(0)


# -- the run record's copy ----------------------------------------------------------------------


def test_record_round_trip() -> None:
    retry = Retry(5, 10, 1.5, 300)
    assert retry.as_record() == {"retries": 5, "backoff": 10, "factor": 1.5, "max_backoff": 300}
    assert Retry.from_record(retry.as_record()) == retry


def test_a_record_with_a_whole_factor_reads_back() -> None:
    """A store may give 2.0 back as 2 (DynamoDB's numbers, read as ints when whole)."""
    retry = Retry.from_record({"retries": 3, "backoff": 60, "factor": 2, "max_backoff": 3600})
    assert retry == Retry(3, 60, 2.0, 3600) and isinstance(retry.factor, float)


GOOD: dict[str, Any] = {"retries": 3, "backoff": 60, "factor": 2.0, "max_backoff": 3600}


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(None, id="none"),
        pytest.param("retries=3", id="text"),
        pytest.param([3, 60, 2.0, 3600], id="list"),
        pytest.param({}, id="empty"),
        pytest.param({"retries": 3}, id="only-retries"),
        pytest.param({**GOOD, "retries": 0}, id="retries-zero"),
        pytest.param({**GOOD, "retries": 21}, id="retries-21"),
        pytest.param({**GOOD, "retries": True}, id="retries-bool"),
        pytest.param({**GOOD, "retries": "3"}, id="retries-text"),
        pytest.param({**GOOD, "backoff": -1}, id="backoff-negative"),
        pytest.param({**GOOD, "backoff": 1.5}, id="backoff-float"),
        pytest.param({**GOOD, "factor": 0.5}, id="factor-low"),
        pytest.param({**GOOD, "factor": float("nan")}, id="factor-nan"),
        pytest.param({**GOOD, "factor": None}, id="factor-null"),
        pytest.param({**GOOD, "max_backoff": 86401}, id="max-high"),
        pytest.param({**GOOD, "max_backoff": 30}, id="max-below-backoff"),
    ],
)
def test_a_malformed_record_reads_as_none(record: object) -> None:
    assert Retry.from_record(record) is None


def test_a_record_may_hold_more_keys() -> None:
    assert Retry.from_record({**GOOD, "later": 1}) == Retry(3, 60, 2.0, 3600)
