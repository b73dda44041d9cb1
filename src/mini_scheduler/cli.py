"""``mini-scheduler``: the command line for developers and operators.

One function per subcommand, each ``(args, context) -> exit code``, registered in
:data:`COMMANDS` with the function that declares its arguments; a new subcommand (jobs,
history, run, status, failover, tick, pause, resume) is one more pair. Exit codes: 0 done,
1 the thing checked is wrong (an entry skipped, a file that cannot be read), 2 a usage error
(a bad argument, statement or zone).

The clock and the environment are injected through :class:`Context`, so tests are deterministic;
only :func:`main` reads the real ones.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TextIO

from mini_scheduler import __version__
from mini_scheduler.clock import Clock, SystemClock
from mini_scheduler.cron import CronExpression, CronSyntaxError, parse
from mini_scheduler.errors import CronFileError, UnknownTimeZoneError
from mini_scheduler.jobs import DEFAULT_TIMEZONE, CronFile
from mini_scheduler.locations import CronFileSource
from mini_scheduler.zones import get_zone, is_fixed_offset

PROG: Final = "mini-scheduler"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
MAX_COUNT: Final = 1000
_UTC_NAMES: Final = frozenset({"UTC", "Etc/UTC"})


@dataclass(frozen=True, slots=True)
class Context:
    """What a subcommand may use besides its arguments."""

    clock: Clock
    out: TextIO
    err: TextIO
    environ: Mapping[str, str]

    def print(self, text: str = "") -> None:
        print(text, file=self.out)

    def fail(self, command: str, message: str, code: int = EXIT_USAGE) -> int:
        """One line on stderr naming the command, and the exit code."""
        print(f"{PROG} {command}: {message}", file=self.err)
        return code


Handler = Callable[[argparse.Namespace, Context], int]


# -- shared helpers ---------------------------------------------------------------------------


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _read(location: str, context: Context) -> CronFile:
    """The cron file at ``location`` (a path, ``file:<path>`` or ``s3://bucket/key``)."""
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    return CronFileSource(location, default_timezone=zone).load()


def _level(level: str) -> str:
    return f"{level.upper():<7}"


# -- validate ---------------------------------------------------------------------------------


def _add_validate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        cron_file = _read(args.file, context)
    except CronFileError as exc:
        if args.json:
            context.print(json.dumps({"source": args.file, "ok": False, "error": str(exc)}))
        else:
            context.print(f"{_level('error')} {exc}")
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
        context.print(f"{_level(line.level)} {line.message}")
    warnings = sum(1 for p in cron_file.problems if p.level == "warning")
    summary = (
        f"{cron_file.source}: {_plural(len(cron_file.jobs), 'job')} loaded, "
        f"{_plural(cron_file.skipped, 'entry', 'entries')} skipped"
    )
    if warnings:
        summary += f" ({_plural(warnings, 'warning')})"
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


def _instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text!r} (e.g. 2026-11-30T14:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _add_next(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "next",
        help="the next firings of a cron file's jobs, or of one statement",
        description=(
            "Print the next firings of each job in FILE, or of the statement given with "
            "--cron read in --zone, each in UTC and in the job's zone."
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
        type=_instant,
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


def _firings(schedule: _Schedule, after: datetime, count: int) -> list[datetime]:
    found: list[datetime] = []
    moment = after
    while len(found) < count:
        following = schedule.expression.next_after(moment, schedule.zone)
        if following is None:
            break
        found.append(following)
        moment = following
    return found


def _utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _offset(local: datetime) -> str:
    text = local.strftime("%z")  # +0530
    return f"{text[:3]}:{text[3:5]}" if len(text) >= 5 else "+00:00"


def next_firings(args: argparse.Namespace, context: Context) -> int:
    after: datetime = args.after or context.clock.now().astimezone(UTC)
    schedules: list[_Schedule] = []
    if args.cron is not None:
        if args.file is not None:
            return context.fail("next", "give FILE or --cron, not both")
        zone = args.zone or context.environ.get("DEFAULT_TIMEZONE", "").strip()
        zone = zone or DEFAULT_TIMEZONE
        try:
            get_zone(zone)
        except UnknownTimeZoneError:
            return context.fail("next", f"unknown time zone {zone!r}")
        try:
            expression = parse(args.cron)
        except CronSyntaxError as exc:
            return context.fail("next", str(exc))
        if is_fixed_offset(zone) or zone in ("EST", "MST", "HST"):
            print(
                f"{_level('warning')} time zone {zone} never follows daylight saving - name a "
                "region such as America/New_York",
                file=context.err,
            )
        schedules.append(_Schedule(None, args.cron, expression, zone))
    elif args.file is not None:
        if args.zone is not None:
            return context.fail("next", "--zone goes with --cron: a file's jobs name their zone")
        try:
            cron_file = _read(args.file, context)
        except CronFileError as exc:
            return context.fail("next", str(exc), EXIT_FAILED)
        for problem in cron_file.problems:
            print(f"{_level(problem.level)} {problem.message}", file=context.err)
        schedules.extend(
            _Schedule(j.name, j.statement, j.expression, j.zone, j.service, j.enabled)
            for j in cron_file.jobs
        )
    else:
        return context.fail("next", "give a cron FILE, or --cron STATEMENT")

    table = [(schedule, _firings(schedule, after, args.count)) for schedule in schedules]
    if args.json:
        context.print(json.dumps(_next_json(after, table), indent=2))
    else:
        _next_text(context, after, table)
    return EXIT_OK


def _next_json(after: datetime, table: Sequence[tuple[_Schedule, list[datetime]]]) -> Any:
    schedules = []
    for schedule, firings in table:
        zone = get_zone(schedule.zone)
        items = []
        for firing in firings:
            local = firing.astimezone(zone)
            items.append(
                {
                    "utc": _utc_text(firing),
                    "local": local.isoformat(),
                    "abbreviation": local.tzname(),
                    "offset": _offset(local),
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
    return {"after": _utc_text(after), "schedules": schedules}


def _next_text(
    context: Context, after: datetime, table: Sequence[tuple[_Schedule, list[datetime]]]
) -> None:
    context.print(f"Next firings after {_utc_text(after)}")
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
            context.print(f"  {utc}   {wall} {local.tzname()} (UTC{_offset(local)})")


# -- the parser -------------------------------------------------------------------------------

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: Final[dict[str, tuple[Register, Handler]]] = {
    "validate": (_add_validate, validate),
    "next": (_add_next, next_firings),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Quartz cron jobs on AWS: check cron files and see when jobs fire.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register, _ in COMMANDS.values():
        register(commands)
    return parser


def main(
    argv: list[str] | None = None,
    *,
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Run one command; return its exit code (argparse's own exits become return values)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE if exc.code else EXIT_OK
    context = Context(
        clock=clock or SystemClock(),
        out=sys.stdout,
        err=sys.stderr,
        environ=os.environ if environ is None else environ,
    )
    _, handler = COMMANDS[args.command]
    return handler(args, context)
