"""Two cron files compared (mini_scheduler.jobs.compare): which keys differ, how a mapping is
said by its keys, and the firings that move, from a given instant."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mini_scheduler.jobs import load
from mini_scheduler.jobs.compare import Change, compare

START = datetime(2026, 11, 30, 14, 0, 7, tzinfo=UTC)
REINDEX = """jobs:
  - name: "reindex"
    cron: "0 0 3 * * ?"
    service: "ecs://mini-scheduler-cluster/mini-scheduler-reindex"
    ecs:
      launch_type: "FARGATE"
      subnets: ["subnet-0abc1234"]
      container: "app"
      environment: {INDEX: "orders"}
"""


def _job(lines: str) -> str:
    return 'jobs:\n  - name: "a"\n    service: "fn"\n' + lines


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            '    cron: "0 0 * * * ?"\n    parameters: {n: 1}\n',
            '    cron: "0 0 * * * ?"\n    parameters: {n: true}\n',
            [Change("parameters", changed=("n",))],
        ),
        (
            '    cron: "0 0 * * * ?"\n    parameters: {r: {a: 1, b: 2}, x: 1}\n',
            '    cron: "0 0 * * * ?"\n    parameters: {r: {b: 3, c: 1}, y: 1}\n',
            [Change("parameters", added=("r.c", "y"), removed=("r.a", "x"), changed=("r.b",))],
        ),
        (
            '    cron: "0 0 * * * ?"\n    parameters: {r: 1, s: 2}\n',
            '    cron: "0 0 * * * ?"\n    parameters: {s: 2, r: 1}\n',
            [],
        ),
        (
            '    cron: "0 0 * * * ?"\n',
            '    cron: "0 0 * * * ?"\n    timezone: "Europe/Paris"\n    overlap: skip\n',
            [Change("timezone", "UTC", "Europe/Paris"), Change("overlap", "allow", "skip")],
        ),
    ],
    ids=["1 is not true", "nested keys by path", "order does not count", "scalars"],
)
def test_the_keys_that_differ(before: str, after: str, expected: list[Change]) -> None:
    plan = compare(load(_job(before)), load(_job(after)), START)
    assert [list(job.fields) for job in plan.jobs] == ([expected] if expected else [])
    assert plan.unchanged == (0 if expected else 1)


def test_a_target_s_own_mapping_is_compared_under_its_key() -> None:
    after = REINDEX.replace('container: "app"', 'container: "worker"')
    (job,) = compare(load(REINDEX), load(after), START).jobs
    assert job.fields == (Change("ecs", changed=("container",)),)
    assert not job.timing and job.before == job.after == ()
    assert job.to_json()["fields"] == [
        {"field": "ecs", "added": [], "removed": [], "changed": ["container"]}
    ]


def test_the_firings_that_appear_and_disappear_in_24_hours() -> None:
    hourly = _job('    cron: "0 0 * * * ?"\n')
    every_two = _job('    cron: "0 0 0/2 * * ?"\n')
    plan = compare(load(hourly), load(every_two), START)
    (job,) = plan.jobs
    # hourly from 15:00 to 14:00 tomorrow: 24; every two hours from 16:00: 12, all hourly too
    assert (job.appear, job.disappear) == (0, 12)
    assert [at.hour for at in job.after] == [16, 18, 20]
    assert [at.hour for at in job.before] == [15, 16, 17]
    nothing = compare(load(hourly), load(hourly), START)
    assert not nothing.changes and nothing.jobs == ()


def test_a_file_setting_that_changes_is_a_change() -> None:
    text = _job('    cron: "0 0 * * * ?"\n')
    plan = compare(load(text), load(text + "misfire.max: 5\n"), START)
    assert plan.changes and plan.settings == (Change("misfire.max", 100, 5),)


def test_a_jitter_or_window_change_shows_when_the_next_firings_start_before_and_after() -> None:
    from mini_scheduler.jobs.spread import planned_after

    before = load(_job('    cron: "0 0 * * * ?"\n'))
    after = load(_job('    cron: "0 0 * * * ?"\n    window: 30\n'))
    (change,) = compare(before, after, START).jobs
    assert list(change.fields) == [Change("window", None, 30)]
    assert change.timing and change.before == tuple(before.jobs[0].firings(START, END3))
    assert change.after == tuple(s for _, s in planned_after(after.jobs[0], START, 3))
    assert change.after != change.before
    assert (change.appear, change.disappear) == (0, 0)  # the same firings, started later
    swapped = load(_job('    cron: "0 0 * * * ?"\n    jitter: 60\n'))
    (change,) = compare(after, swapped, START).jobs
    assert list(change.fields) == [Change("jitter", None, 60), Change("window", 30, None)]
    assert change.to_json()["fields"] == [
        {"field": "jitter", "before": None, "after": 60},
        {"field": "window", "before": 30, "after": None},
    ]


END3 = datetime(2026, 11, 30, 17, 0, 1, tzinfo=UTC)


def test_a_cap_or_a_pool_size_that_changes_is_a_change() -> None:
    text = _job('    cron: "0 0 * * * ?"\n    overlap: "skip"\n')
    capped = text + "    max_running: 3\n    pool: exports\n"
    plan = compare(load(text), load("pools: {exports: 2}\n" + capped), START)
    (job,) = plan.jobs
    assert list(job.fields) == [Change("max_running", None, 3), Change("pool", None, "exports")]
    assert plan.settings == (Change("pools.exports", None, 2),)
    resized = compare(
        load("pools: {exports: 2}\n" + capped), load("pools: {exports: 4}\n" + capped), START
    )
    assert resized.jobs == () and resized.settings == (Change("pools.exports", 2, 4),)
