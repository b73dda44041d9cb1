"""One tick's expansion: the firings in ``[M, M+60s)`` of every job, for many minutes M.

The ticker asks every job, every minute, for its firings in the minute. Almost always the answer
is "none", so what matters most is how fast a job that cannot fire is ruled out. The same job mix
(every minute, every 15 s, hourly, daily, weekdays, L, W, #, yearly, mixed; UTC and a dozen zones
with and without daylight saving) is expanded by mini-scheduler and by croniter, the baseline,
for the statements croniter can read (Quartz day-of-week 1-7 = SUN-SAT translated to croniter's
0-6, the seconds field first). croniter is used the way a careful ticker would use it: one
``croniter`` object per job, built before the clock starts, moved to each minute with
``set_current`` on an aware datetime in the job's zone (made once per zone and minute), then
``get_next`` until the minute ends.

Both engines' firings are compared job by job and minute by minute; mismatches are counted and
printed. Times are CPU time of this process (``time.process_time``), so that other work on the
machine does not blur the ratio.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from croniter import croniter

from mini_scheduler.cron import CronExpression, parse
from mini_scheduler.zones import get_zone

# 2026-06-01 is a Monday, the first of the month: 12:30Z-13:30Z holds firings of hourly, daily
# (09:00 New York is 13:00Z), weekday and first-Monday jobs, and many minutes where nothing is due.
FIRST_MINUTE = datetime(2026, 6, 1, 12, 30, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
ZONES = (
    *(["UTC"] * 6),
    "America/New_York",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Europe/London",
    "Europe/Helsinki",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Etc/GMT+5",
)
KINDS = {  # kind: weight in the mix
    "every minute": 6,
    "every 15 s": 4,
    "hourly": 12,
    "daily": 20,
    "weekdays": 12,
    "business hours": 6,
    "L": 4,
    "W": 4,
    "#": 4,
    "nL": 3,
    "LW": 2,
    "L-n": 2,
    "yearly": 4,
    "year field": 3,
    "mixed": 10,
    "weekend": 4,
}
_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


@dataclass(frozen=True)
class Job:
    kind: str
    statement: str  # Quartz
    zone: str
    croniter_statement: str | None  # the same schedule for croniter, or None if it cannot say it


def _statement(kind: str, rng: random.Random) -> tuple[str, str | None]:
    """One statement of ``kind``, in Quartz syntax and (when it can) croniter's."""
    s, m, h = rng.randrange(60), rng.randrange(60), rng.randrange(24)
    day, month = rng.randint(1, 28), rng.randint(1, 12)
    weekday, nth = rng.randint(1, 7), rng.randint(1, 4)
    simple: dict[str, tuple[str, str | None]] = {
        "every minute": ("0 * * * * ?", "0 * * * * *"),
        "every 15 s": ("0/15 * * * * ?", "*/15 * * * * *"),
        "hourly": (f"0 {m} * * * ?", f"0 {m} * * * *"),
        "daily": (f"0 {m} {h} * * ?", f"0 {m} {h} * * *"),
        "weekdays": (f"0 {m} {h} ? * MON-FRI", f"0 {m} {h} * * 1-5"),
        "business hours": ("0 0/5 9-17 ? * MON-FRI", "0 */5 9-17 * * 1-5"),
        "L": (f"0 {m} {h} L * ?", f"0 {m} {h} L * *"),
        "W": (f"0 {m} {h} {day}W * ?", f"0 {m} {h} {day}W * *"),
        "#": (f"0 {m} {h} ? * {_NAMES[weekday - 1]}#{nth}", f"0 {m} {h} * * {weekday - 1}#{nth}"),
        "nL": (f"0 {m} {h} ? * {weekday}L", f"0 {m} {h} * * L{weekday - 1}"),
        "LW": (f"0 {m} {h} LW * ?", None),
        "L-n": (f"0 {m} {h} L-{rng.randint(1, 5)} * ?", None),
        "yearly": (f"0 {m} {h} {day} {month} ?", f"0 {m} {h} {day} {month} *"),
        "year field": (f"0 {m} {h} * * ? 2026-2030", None),
        "weekend": (f"*/20 {m} * ? * SAT,SUN", f"*/20 {m} * * * 0,6"),
    }
    if kind in simple:
        return simple[kind]
    second = rng.choice(["0", str(s), "0/30", "10,40"])
    minutes = rng.choice([str(m), f"{m % 30}/30", f"{m % 10}-59/10", f"{m},{(m + 20) % 60}"])
    hours = rng.choice(["*", f"{h}", f"{min(h, 20)}-23", "8-18/2", "22-2"])
    cron_second = {"0/30": "*/30"}.get(second, second)
    return f"{second} {minutes} {hours} * * ?", f"{cron_second} {minutes} {hours} * * *"


def job_mix(count: int, seed: int) -> list[Job]:
    rng = random.Random(seed)
    kinds = rng.choices(list(KINDS), weights=list(KINDS.values()), k=count)
    jobs = []
    for kind in kinds:
        quartz, cron = _statement(kind, rng)
        jobs.append(Job(kind, quartz, rng.choice(ZONES), cron))
    return jobs


Found = list[list[datetime]]  # per job, its firings over all the minutes


def run_ours(jobs: list[Job], minutes: list[datetime]) -> tuple[float, Found]:
    compiled: list[tuple[CronExpression, tzinfo]] = [
        (parse(job.statement), get_zone(job.zone)) for job in jobs
    ]
    found: Found = [[] for _ in jobs]
    started = time.process_time()
    for start in minutes:
        end = start + MINUTE
        for index, (expression, zone) in enumerate(compiled):
            for firing in expression.firings(start, end, zone):
                found[index].append(firing)
    return time.process_time() - started, found


def run_croniter(jobs: list[Job], minutes: list[datetime]) -> tuple[float, Found]:
    iterators = []
    for job in jobs:
        assert job.croniter_statement is not None
        zone = get_zone(job.zone)
        iterator = croniter(
            job.croniter_statement, minutes[0].astimezone(zone), second_at_beginning=True
        )
        iterators.append((iterator, zone))
    zones = {zone for _, zone in iterators}
    found: Found = [[] for _ in jobs]
    second = timedelta(seconds=1)
    started = time.process_time()
    for start in minutes:
        end = start + MINUTE
        local = {zone: (start - second).astimezone(zone) for zone in zones}  # once per zone
        for index, (iterator, zone) in enumerate(iterators):
            iterator.set_current(local[zone], force=True)
            while True:
                firing = iterator.get_next(datetime)
                if firing >= end:
                    break
                found[index].append(firing.astimezone(UTC))
    return time.process_time() - started, found


def _croniter_reads(job: Job) -> bool:
    if job.croniter_statement is None:
        return False
    try:
        croniter(job.croniter_statement, FIRST_MINUTE, second_at_beginning=True)
    except (ValueError, KeyError):
        return False
    return True


def main(jobs: int = 10_000, minutes: int = 60, seed: int = 20260601) -> int:
    mix = job_mix(jobs, seed)
    ticks = [FIRST_MINUTE + i * MINUTE for i in range(minutes)]
    handled = [job for job in mix if _croniter_reads(job)]

    # One untimed minute first: zone timelines and day masks are built once per container.
    run_ours(mix, ticks[:1])
    run_croniter(handled, ticks[:1])
    ours_all, all_found = run_ours(mix, ticks)
    ours_subset, ours_found = run_ours(handled, ticks)
    theirs, theirs_found = run_croniter(handled, ticks)

    mismatches = [
        (job, sorted(set(a) - set(b)), sorted(set(b) - set(a)))
        for job, a, b in zip(handled, ours_found, theirs_found, strict=True)
        if a != b
    ]

    def per_window(seconds: float, count: int) -> float:
        return seconds / (count * minutes) * 1e6

    ours_us = per_window(ours_subset, len(handled))
    theirs_us = per_window(theirs, len(handled))
    fired = sum(1 for found in all_found for _ in found)
    due = sum(1 for found in all_found if found)
    kinds = Counter(job.kind for job in mix)
    print(
        f"Expanding one tick's window [M, M+60s): {len(mix)} jobs x {minutes} consecutive "
        f"minutes from {FIRST_MINUTE:%Y-%m-%dT%H:%MZ}, {len(set(ZONES))} zones"
    )
    print("mix: " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()))
    print(f"{fired} firings from {due} jobs; croniter reads {len(handled)} of the {len(mix)} jobs")
    print()
    print(f"{'engine':<40} {'jobs':>6} {'minutes':>7} {'µs/job-window':>14}  ratio")
    rows = [
        ("mini-scheduler, whole mix", len(mix), per_window(ours_all, len(mix)), ""),
        ("mini-scheduler, croniter's subset", len(handled), ours_us, "1.0x"),
        ("croniter, same subset", len(handled), theirs_us, f"{theirs_us / ours_us:.1f}x slower"),
    ]
    for name, count, micros, ratio in rows:
        print(f"{name:<40} {count:>6} {minutes:>7} {micros:>14.2f}  {ratio}")
    print()
    print(
        f"same firings on croniter's subset: {len(handled) - len(mismatches)} of {len(handled)} "
        f"jobs agree, {len(mismatches)} mismatches"
    )
    for job, only_ours, only_theirs in mismatches[:20]:
        print(
            f"  {job.statement!r} @{job.zone} (croniter {job.croniter_statement!r}): "
            f"only mini-scheduler {[f'{t:%H:%M:%S}' for t in only_ours]}, "
            f"only croniter {[f'{t:%H:%M:%S}' for t in only_theirs]}"
        )
    return 1 if mismatches else 0
