"""``mini-scheduler next``: the next firings of each job of a cron file, or of one statement,
in UTC and in the job's zone. A job with ``jitter`` or ``window`` shows each firing at the
instant it starts (:mod:`mini_scheduler.jobs.spread`), with its own instant beside it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, Context
from mini_scheduler.cli.files import read_cron_file
from mini_scheduler.cli.render import instant, level_tag, utc_iso, utc_offset
from mini_scheduler.cron import CronExpression, CronSyntaxError, parse
from mini_scheduler.cron.unix import unix_hint
from mini_scheduler.cron.zones import get_zone, is_fixed_offset, suggest_zone
from mini_scheduler.errors import CronFileError, UnknownTimeZoneError
from mini_scheduler.jobs import DEFAULT_TIMEZONE, Job
from mini_scheduler.jobs.spread import planned_after

MAX_COUNT: Final = 1000
_UTC_NAMES: Final = frozenset({"UTC", "Etc/UTC"})

Upcoming = list[tuple[datetime, datetime]]
"""A schedule's next firings: ``(its own instant, the instant it starts)``."""


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_COUNT}, not {value}")
    return value


def add_next(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "next",
        help="the next firings of a cron file's jobs, or of one statement",
        description=(
            "Print the next firings of each job in FILE, or of the statement given with "
            "--cron read in --zone, each in UTC and in the job's zone. The file's problems go "
            "to stderr; exit 1 when an entry was skipped, as validate does."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE", nargs="?", help="a path, file:<path> or s3://bucket/key"
    )
    parser.add_argument("--cron", metavar="STATEMENT", help="a Quartz cron statement instead")
    parser.add_argument(
        "--zone", metavar="ZONE", help="the IANA zone of --cron (default DEFAULT_TIMEZONE, UTC)"
    )
    parser.add_argument(
        "--count", "-n", type=_count, default=5, help="how many firings each (default 5)"
    )
    parser.add_argument(
        "--after",
        type=instant,
        metavar="ISO",
        help="start after this instant (default now; without an offset it is UTC)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


@dataclass(frozen=True, slots=True)
class _Schedule:
    job: str | None
    statement: str
    expression: CronExpression
    zone: str
    service: str | None = None
    enabled: bool = True
    start: datetime | None = None  # the job's start and end instants
    end: datetime | None = None
    source: Job | None = None  # the file's job (None: --cron)

    @property
    def spread(self) -> str | None:
        """How its firings are spread, in words (None: they start at their instant)."""
        job = self.source
        if job is None or not job.spread_seconds:
            return None
        return f"jitter {job.jitter} s" if job.jitter else f"window {job.window} min"


def _firings(schedule: _Schedule, after: datetime, count: int) -> Upcoming:
    if schedule.source is not None and schedule.source.spread_seconds:
        return planned_after(schedule.source, after, count)
    found: list[datetime] = []
    moment = after
    if schedule.start is not None and schedule.start > moment:
        moment = schedule.start - timedelta(seconds=1)
    while len(found) < count:
        following = schedule.expression.next_after(moment, schedule.zone)
        if following is not None and schedule.start is not None and following < schedule.start:
            following = schedule.expression.next_after(following, schedule.zone)
        if following is None or (schedule.end is not None and following >= schedule.end):
            break
        found.append(following)
        moment = following
    return [(at, at) for at in found]


def next_firings(args: argparse.Namespace, context: Context) -> int:
    after: datetime = args.after or context.clock.now().astimezone(UTC)
    schedules: list[_Schedule] = []
    complete = True
    if args.cron is not None:
        if args.file is not None:
            return context.fail("next", "give FILE or --cron, not both")
        zone = args.zone or context.environ.get("DEFAULT_TIMEZONE", "").strip()
        zone = zone or DEFAULT_TIMEZONE
        try:
            get_zone(zone)
        except UnknownTimeZoneError:
            guess = suggest_zone(zone)
            hint = "" if guess is None else f" - did you mean {guess}?"
            return context.fail("next", f"unknown time zone {zone!r}{hint}")
        try:
            expression = parse(args.cron)
        except CronSyntaxError as exc:
            unix = unix_hint(args.cron)
            return context.fail("next", str(exc) if unix is None else f"{exc} - {unix}")
        if is_fixed_offset(zone) or zone in ("EST", "MST", "HST"):
            print(
                f"{level_tag('warning')} time zone {zone} never follows daylight saving - name a "
                "region such as America/New_York",
                file=context.err,
            )
        schedules.append(_Schedule(None, args.cron, expression, zone))
    elif args.file is not None:
        if args.zone is not None:
            return context.fail("next", "--zone goes with --cron: a file's jobs name their zone")
        try:
            cron_file = read_cron_file(args.file, context)
        except CronFileError as exc:
            return context.fail("next", str(exc), EXIT_FAILED)
        for problem in cron_file.problems:
            print(f"{level_tag(problem.level)} {problem.message}", file=context.err)
        complete = cron_file.ok  # a skipped entry fails the command, as in validate
        schedules.extend(
            _Schedule(
                j.name, j.statement, j.expression, j.zone, j.service, j.enabled, j.start, j.end, j
            )
            for j in cron_file.jobs
        )
    else:
        return context.fail("next", "give a cron FILE, or --cron STATEMENT")

    table = [(schedule, _firings(schedule, after, args.count)) for schedule in schedules]
    if args.json:
        context.print(json.dumps(_next_json(after, table), indent=2))
    else:
        _next_text(context, after, table)
    return EXIT_OK if complete else EXIT_FAILED


def _next_json(after: datetime, table: Sequence[tuple[_Schedule, Upcoming]]) -> Any:
    schedules = []
    for schedule, firings in table:
        zone = get_zone(schedule.zone)
        items = []
        for nominal, start in firings:
            local = start.astimezone(zone)
            item: dict[str, Any] = {
                "utc": utc_iso(start),
                "local": local.isoformat(),
                "abbreviation": local.tzname(),
                "offset": utc_offset(local),
            }
            if schedule.spread is not None:  # when it starts, and its own instant
                item["scheduled"] = utc_iso(nominal)
                item["spreadSeconds"] = int((start - nominal).total_seconds())
            items.append(item)
        shown: dict[str, Any] = {
            "job": schedule.job,
            "statement": schedule.statement,
            "zone": schedule.zone,
            "service": schedule.service,
            "enabled": schedule.enabled,
        }
        if schedule.source is not None and schedule.spread is not None:
            shown |= {"jitter": schedule.source.jitter, "window": schedule.source.window}
        schedules.append(shown | {"firings": items})
    return {"after": utc_iso(after), "schedules": schedules}


def _next_text(
    context: Context, after: datetime, table: Sequence[tuple[_Schedule, Upcoming]]
) -> None:
    context.print(f"Next firings after {utc_iso(after)}")
    if not table:
        context.print("(no jobs loaded)")
    for schedule, firings in table:
        context.print()
        title = f"{schedule.statement} @{schedule.zone}"
        if schedule.job is not None:
            title = f"{schedule.job}  {title}  -> {schedule.service}"
            if not schedule.enabled:
                title += "  (disabled: the ticker skips it)"
            if schedule.spread is not None:
                title += f"  ({schedule.spread}: when each starts)"
        context.print(title)
        if not firings:
            context.print("  no firing after that")
            continue
        for nominal, start in firings:
            context.print(_line(schedule, nominal, start))


def _line(schedule: _Schedule, nominal: datetime, start: datetime) -> str:
    """A firing, at the instant it starts: in UTC, in its zone, and its own instant when it is
    spread."""
    line = f"  {start.strftime('%a %Y-%m-%d %H:%M:%S UTC')}"
    if schedule.zone not in _UTC_NAMES:
        local = start.astimezone(get_zone(schedule.zone))
        wall = local.strftime("%a %Y-%m-%d %H:%M:%S")
        line += f"   {wall} {local.tzname()} (UTC{utc_offset(local)})"
    if schedule.spread is not None:
        late = int((start - nominal).total_seconds())
        line += f"   firing {nominal.strftime('%H:%M:%S')} UTC +{late} s"
    return line
