"""The developer's commands on a cron file: ``validate`` (the load report) and ``next`` (the
next firings of each job, or of one statement)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, Context
from mini_scheduler.cli.render import instant, level_tag, plural, utc_iso, utc_offset
from mini_scheduler.cron import CronExpression, CronSyntaxError, parse
from mini_scheduler.cron.unix import unix_hint
from mini_scheduler.cron.zones import get_zone, is_fixed_offset, suggest_zone
from mini_scheduler.errors import CronFileError, UnknownTimeZoneError
from mini_scheduler.jobs import DEFAULT_TIMEZONE, CronFile
from mini_scheduler.jobs.locations import CronFileSource

MAX_COUNT: Final = 1000
_UTC_NAMES: Final = frozenset({"UTC", "Etc/UTC"})


def _read_cron_file(location: str, context: Context) -> CronFile:
    """The cron file at ``location`` (a path, ``file:<path>`` or ``s3://bucket/key``)."""
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    return CronFileSource(location, default_timezone=zone).load()


# -- validate ---------------------------------------------------------------------------------


def add_validate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "validate",
        help="check a cron file and report every problem",
        description=(
            "Read a cron file as the ticker does and print its load report: each problem at "
            "its level and each job that loaded. Exit 0 when every entry loaded (warnings "
            "allowed), 1 otherwise."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a path, file:<path> or s3://bucket/key")
    parser.add_argument("--quiet", "-q", action="store_true", help="print problems only")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def validate(args: argparse.Namespace, context: Context) -> int:
    try:
        cron_file = _read_cron_file(args.file, context)
    except CronFileError as exc:
        if args.json:
            context.print(json.dumps({"source": args.file, "ok": False, "error": str(exc)}))
        else:
            context.print(f"{level_tag('error')} {exc}")
        return EXIT_FAILED
    if args.json:
        report = {
            "source": cron_file.source,
            "ok": cron_file.ok,
            "version": cron_file.version,
            "jobs": [job.name for job in cron_file.jobs],
            "skipped": cron_file.skipped,
            "problems": [
                {"level": p.level, "message": p.message, "entry": p.entry}
                for p in cron_file.problems
            ],
        }
        context.print(json.dumps(report, indent=2))
        return EXIT_OK if cron_file.ok else EXIT_FAILED
    lines = cron_file.problems if args.quiet else cron_file.lines()
    for line in lines:
        context.print(f"{level_tag(line.level)} {line.message}")
    warnings = sum(1 for p in cron_file.problems if p.level == "warning")
    summary = (
        f"{cron_file.source}: {plural(len(cron_file.jobs), 'job')} loaded, "
        f"{plural(cron_file.skipped, 'entry', 'entries')} skipped"
    )
    if warnings:
        summary += f" ({plural(warnings, 'warning')})"
    context.print(summary)
    return EXIT_OK if cron_file.ok else EXIT_FAILED


# -- next -------------------------------------------------------------------------------------


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


def _firings(schedule: _Schedule, after: datetime, count: int) -> list[datetime]:
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
    return found


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
            cron_file = _read_cron_file(args.file, context)
        except CronFileError as exc:
            return context.fail("next", str(exc), EXIT_FAILED)
        for problem in cron_file.problems:
            print(f"{level_tag(problem.level)} {problem.message}", file=context.err)
        complete = cron_file.ok  # a skipped entry fails the command, as in validate
        schedules.extend(
            _Schedule(
                j.name, j.statement, j.expression, j.zone, j.service, j.enabled, j.start, j.end
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


def _next_json(after: datetime, table: Sequence[tuple[_Schedule, list[datetime]]]) -> Any:
    schedules = []
    for schedule, firings in table:
        zone = get_zone(schedule.zone)
        items = []
        for firing in firings:
            local = firing.astimezone(zone)
            items.append(
                {
                    "utc": utc_iso(firing),
                    "local": local.isoformat(),
                    "abbreviation": local.tzname(),
                    "offset": utc_offset(local),
                }
            )
        schedules.append(
            {
                "job": schedule.job,
                "statement": schedule.statement,
                "zone": schedule.zone,
                "service": schedule.service,
                "enabled": schedule.enabled,
                "firings": items,
            }
        )
    return {"after": utc_iso(after), "schedules": schedules}


def _next_text(
    context: Context, after: datetime, table: Sequence[tuple[_Schedule, list[datetime]]]
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
        context.print(title)
        if not firings:
            context.print("  no firing after that")
            continue
        zone = get_zone(schedule.zone)
        for firing in firings:
            utc = firing.strftime("%a %Y-%m-%d %H:%M:%S UTC")
            if schedule.zone in _UTC_NAMES:
                context.print(f"  {utc}")
                continue
            local = firing.astimezone(zone)
            wall = local.strftime("%a %Y-%m-%d %H:%M:%S")
            context.print(f"  {utc}   {wall} {local.tzname()} (UTC{utc_offset(local)})")
