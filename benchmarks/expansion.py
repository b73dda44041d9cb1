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
machine does not blur the ratio; 15 consecutive minutes by default (croniter needs ~0.14 ms per
job and minute: a whole hour of 10,000 jobs would take two minutes of ``make bench`` alone).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from croniter import croniter

from benchmarks.table import Row
from mini_scheduler.cron import CronExpression, parse
from mini_scheduler.cron.zones import get_zone

# 2026-06-01 is a Monday, the first of the month: the minutes from 12:53Z hold firings of hourly,
# daily (09:00 New York is 13:00Z), weekday and first-Monday jobs, and many minutes where nothing
# is due. 15 minutes (the default) cross 13:00Z; --minutes 60 runs a whole hour.
FIRST_MINUTE = datetime(2026, 6, 1, 12, 53, tzinfo=UTC)
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


@dataclass(frozen=True)
class Mismatch:
    job: Job
    only_ours: list[datetime]
    only_croniter: list[datetime]


@dataclass(frozen=True)
class ExpansionResult:
    jobs: int
    minutes: int
    handled: int  # jobs croniter can read
    fired: int
    ours_all_us: float  # µs of CPU per job-window, the whole mix
    ours_us: float  # the same, on croniter's subset
    croniter_us: float
    mismatches: list[Mismatch]
    kinds: Counter[str]


def measure(jobs: int = 10_000, minutes: int = 15, seed: int = 20260601) -> ExpansionResult:
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
        Mismatch(job, sorted(set(a) - set(b)), sorted(set(b) - set(a)))
        for job, a, b in zip(handled, ours_found, theirs_found, strict=True)
        if a != b
    ]

    def per_window(seconds: float, count: int) -> float:
        return seconds / max(1, count * minutes) * 1e6

    return ExpansionResult(
        jobs=len(mix),
        minutes=minutes,
        handled=len(handled),
        fired=sum(len(found) for found in all_found),
        ours_all_us=per_window(ours_all, len(mix)),
        ours_us=per_window(ours_subset, len(handled)),
        croniter_us=per_window(theirs, len(handled)),
        mismatches=mismatches,
        kinds=Counter(job.kind for job in mix),
    )


def rows(result: ExpansionResult) -> list[Row]:
    window = f"{result.minutes} min from {FIRST_MINUTE:%H:%MZ}"
    speedup = result.croniter_us / result.ours_us if result.ours_us > 0 else 0.0
    agree = result.handled - len(result.mismatches)
    return [
        Row(
            "1 expansion",
            f"expand a tick window, {result.jobs:,} jobs x {window} (CPU µs/job-window)",
            f"{result.ours_all_us:.2f} µs",
            f"on croniter's {result.handled:,}: ours {result.ours_us:.2f} µs, "
            f"croniter {result.croniter_us:.1f} µs",
            f"{speedup:.1f}x faster",
            ">= 20x",
            speedup >= 20,
        ),
        Row(
            "1 expansion",
            "same firings as croniter, job by job",
            f"{agree:,} of {result.handled:,} jobs agree",
            f"{result.fired:,} firings in the window",
            "",
            "0 mismatches",
            not result.mismatches,
        ),
    ]


def mismatch_lines(result: ExpansionResult, limit: int = 20) -> list[str]:
    return [
        f"  {m.job.statement!r} @{m.job.zone} (croniter {m.job.croniter_statement!r}): "
        f"only mini-scheduler {[f'{t:%H:%M:%S}' for t in m.only_ours]}, "
        f"only croniter {[f'{t:%H:%M:%S}' for t in m.only_croniter]}"
        for m in result.mismatches[:limit]
    ]
