"""The operator's commands for firings beyond cron.yaml's: ``schedule`` (create, list, show and
delete runtime schedules), ``backfill`` (a job's past window, with a progress bar, and
``backfill status``) and ``rerun`` (one past firing again, as a manual run). Each sends the
ticker its event, as ``run`` does: the ticker holds the deployed cron file (whose names a
schedule cannot take, whose jobs a backfill runs) and the store, and acts through the one
operator path. ``schedule create`` first reads each entry as the ticker will
(:func:`~mini_scheduler.schedule_entry.read_schedule`): a bad one is refused before any call.
``schedule list`` and ``show`` read the state table, as ``history`` does, when one is known
(``--table``, ``--stack``, ``STATE_TABLE``): no Invoke permission needed."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mini_scheduler.cli.audit import add_reason, asking
from mini_scheduler.cli.context import (
    EXIT_FAILED,
    EXIT_OK,
    CommandError,
    Context,
    ask_ticker,
)
from mini_scheduler.cli.render import columns, level_tag, plural
from mini_scheduler.cli.where import (
    add_operator,
    add_parameters,
    add_where,
    claims_for,
    one_region,
    operator_name,
    resolve,
)
from mini_scheduler.errors import CronFileError, EventError
from mini_scheduler.jobs import DEFAULT_TIMEZONE, name_problem
from mini_scheduler.jobs.yaml import compose
from mini_scheduler.operator import check_sendable, past_firing
from mini_scheduler.schedule_entry import read_schedule
from mini_scheduler.schedules import Schedules

PROGRESS_EVERY = 15.0
"""Seconds between two looks at a backfill's progress (a tick is a minute)."""
_BAR = 30


def _ask(args: argparse.Namespace, context: Context, command: str, event: dict[str, Any]) -> Any:
    region = one_region(args, context)
    where = resolve(args, context, region)
    if "operator" in event:  # an action: who asks, and why (its audit record)
        event["operator"] = operator_name(args, context, region)
        event |= asking(args, context, region)
    return ask_ticker(context, command, region, where.need_function(), event)


# -- schedule ---------------------------------------------------------------------------------


SERVICE_HELP = (
    "what to run: a function, flow://, sqs://, sns://, events://, ecs:// or https:// (an ecs or "
    "http mapping, an input or a dead_letter: give the schedule in --file)"
)


def add_schedule(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "schedule",
        help="create, list, show or delete runtime schedules (one-time or cron)",
        description=(
            "Runtime schedules are jobs made while the scheduler runs, beside cron.yaml's: a "
            "one-time schedule (--at) or a cron schedule with cron.yaml's keys. They live in "
            "the region that wrote them; a name of cron.yaml cannot be taken."
        ),
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser(
        "create",
        help="create schedules from a file, or one from flags",
        description=(
            "From --file (YAML or JSON: a list of entries, or a mapping with a 'schedules' "
            "list; each entry has cron.yaml's keys, or 'at' in place of 'cron'), or one "
            "schedule from NAME and flags. All are created, or none (every bad entry is named)."
        ),
    )
    create.add_argument("name", metavar="NAME", nargs="?", help="the schedule's name")
    create.add_argument("--file", metavar="FILE", help="the schedules to create")
    create.add_argument("--at", metavar="INSTANT", help="once, at this instant (UTC, with Z)")
    create.add_argument("--cron", metavar="STATEMENT", help="a Quartz cron statement")
    create.add_argument("--timezone", metavar="ZONE", help="the cron statement's zone")
    create.add_argument("--service", metavar="TARGET", help=SERVICE_HELP)
    create.add_argument("--parameters", metavar="JSON", help="a JSON object of parameters")
    create.add_argument("--start", metavar="INSTANT", help="no firing before this instant")
    create.add_argument("--end", metavar="INSTANT", help="no firing from this instant on")
    create.add_argument(
        "--retry",
        type=_retry,
        metavar="N|JSON",
        help="retry a failed run: N retries, or cron.yaml's retry mapping as JSON, e.g. "
        '\'{"retries": 3, "backoff": 30}\'',
    )
    create.add_argument(
        "--timeout", type=_seconds, metavar="SECONDS", help="a run's time limit (cron.yaml's)"
    )
    create.add_argument("--jitter", type=int, metavar="SECONDS", help="start each 0-N s late")
    create.add_argument("--window", type=int, metavar="MINUTES", help="start each in N minutes")
    add_operator(create)
    add_reason(create)
    add_where(create, table=False, function=True)
    read_help = (
        "read from the state table (--table, --stack or STATE_TABLE), else asked of --function"
    )
    listing = actions.add_parser(
        "list", help="every runtime schedule and its next firing", description=read_help
    )
    add_where(listing, function=True)
    show = actions.add_parser("show", help="one runtime schedule, whole", description=read_help)
    show.add_argument("name", metavar="NAME")
    add_where(show, function=True)
    delete = actions.add_parser("delete", help="delete a runtime schedule (its runs stay)")
    delete.add_argument("name", metavar="NAME")
    add_operator(delete)
    add_reason(delete)
    add_where(delete, table=False, function=True)


def schedule(args: argparse.Namespace, context: Context) -> int:
    command = f"schedule {args.action}"
    if args.action in ("list", "show"):
        answer = _read(args, context, command)
    elif args.action == "create":
        entries = _entries(args)
        _check_entries(entries, context)  # refused here: nothing sent, nothing written
        event: dict[str, Any] = {"schedule": "create", "schedules": entries, "operator": None}
        answer = _ask(args, context, command, event)
    else:
        event = {"schedule": "delete", "name": args.name, "operator": None}
        answer = _ask(args, context, command, event)
    if args.json:
        context.print(json.dumps(answer, indent=2))
        return EXIT_OK
    if not isinstance(answer, Mapping):
        raise CommandError(f"the ticker answered {json.dumps(answer)[:200]}")
    if args.action == "create":
        made = answer.get("created", [])
        _print_schedules(context, made)
        context.print(f"{plural(len(made), 'schedule')} created by {answer.get('operator')}.")
    elif args.action == "list":
        found = answer.get("schedules", [])
        _print_schedules(context, found)
        context.print(f"{plural(len(found), 'runtime schedule')}.")
    elif args.action == "show":
        rows = [[key, json.dumps(value)] for key, value in answer.get("entry", {}).items()]
        rows += [
            ["operator", str(answer.get("operator"))],
            ["created", str(answer.get("createdAt"))],
            ["next firing", str(answer.get("nextFiring"))],
        ]
        for line in columns(rows):
            context.print(line)
    else:
        gone = answer.get("deleted", {})
        context.print(f"Runtime schedule {gone.get('name')} deleted by {answer.get('operator')}.")
    say_regions(context, answer)
    return EXIT_OK


def say_regions(context: Context, answer: Mapping[str, Any]) -> None:
    """The peer regions brought in step after an operator's write (mini_scheduler.carry), and
    on stderr each that was not: the next active tick catches it up."""
    regions = answer.get("regions")
    if not isinstance(regions, Mapping):
        return
    if regions.get("inStep"):
        context.print(f"In step: {', '.join(map(str, regions['inStep']))}.")
    for region, why in dict(regions.get("notInStep") or {}).items():
        context.warn(
            f"{level_tag('warning')} {region} not in step yet ({why}): the active region's "
            "next tick catches it up"
        )


def _print_schedules(context: Context, schedules: Sequence[Mapping[str, Any]]) -> None:
    rows = []
    for item in schedules:
        entry = item.get("entry", {})
        when = entry.get("at") or f"{entry.get('cron')} @{entry.get('timezone')}"
        rows.append(
            [
                str(item.get("name")),
                str(item.get("kind")),
                str(when),
                str(entry.get("service")),
                f"next {item.get('nextFiring')}",
            ]
        )
    for line in columns(rows):
        context.print(line)


def _read(args: argparse.Namespace, context: Context, command: str) -> Any:
    """``list`` or ``show``'s answer, as the ticker gives it: read from the region's store when
    it is known, else asked of the ticker (``--function`` alone)."""
    region = one_region(args, context)
    where = resolve(args, context, region)
    mongo = context.environ.get("CLAIM_STORE", "").strip() == "mongodb"
    if not where.table and not mongo and where.function:
        event = {"schedule": "list"} if args.action == "list" else {"schedule": "show"}
        if args.action == "show":
            event["name"] = args.name
        return _ask(args, context, command, event)
    schedules = Schedules(claims_for(context, where), cron=None, origin="cli")
    if args.action == "list":
        return {"schedules": [item.to_json() for item in schedules.all()]}
    try:
        return schedules.show(args.name).to_json()
    except EventError as exc:
        raise CommandError(str(exc)) from None


def _check_entries(entries: Sequence[object], context: Context) -> None:
    """Read each entry as the ticker will (the same reader): CommandError naming every entry
    that cannot be a schedule, before anything is sent. Names taken by cron.yaml or another
    schedule are the ticker's to check: it holds both."""
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    now = context.clock.now()
    reasons: list[str] = []
    for number, raw in enumerate(entries, 1):
        try:
            job, _, _ = read_schedule(raw, default_zone=zone, now=now)
        except EventError as exc:
            reasons.append(f"entry {number}: {exc}")
            continue
        problem = name_problem(job.name)
        if problem:
            reasons.append(f"entry {number}: {problem}")
    if reasons:
        shown = reasons[:20] + ([f"... and {len(reasons) - 20} more"] if len(reasons) > 20 else [])
        raise CommandError("nothing created - " + "; ".join(shown))  # as the ticker's refusal


def _retry(text: str) -> dict[str, Any]:
    """``--retry``: N retries, or cron.yaml's retry mapping as a JSON object (its keys are
    checked with the entry)."""
    if text.strip().isdigit():
        return {"retries": int(text)}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f'not a number of retries or a JSON object such as {{"retries": 3}}: {text!r}'
        )
    return value


def _seconds(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None


def _entries(args: argparse.Namespace) -> list[Any]:
    """The entries to create: the file's, or one from NAME and the flags."""
    flags = {
        key: getattr(args, key)
        for key in (
            *("at", "cron", "timezone", "service", "start", "end", "retry", "timeout"),
            *("jitter", "window"),
        )
        if getattr(args, key) is not None
    }
    if args.parameters is not None:
        try:
            flags["parameters"] = json.loads(args.parameters)
        except ValueError as exc:
            raise CommandError(f"--parameters is not JSON: {exc}", 2) from None
    if args.file is not None:
        if args.name is not None or flags:
            raise CommandError("give --file, or NAME and flags: not both", 2)
        return _file_entries(args.file)
    if args.name is None:
        raise CommandError("give NAME with --at or --cron and --service, or --file FILE", 2)
    return [{"name": args.name, **flags}]


def _file_entries(path: str) -> list[Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    try:
        _, data, duplicates = compose(text, path)
    except CronFileError as exc:
        raise CommandError(str(exc)) from None
    if duplicates:
        first = duplicates[0]
        raise CommandError(
            f"{path}: key {first.key} appears twice (lines {first.first} and {first.again})"
        )
    if isinstance(data, Mapping) and set(data) == {"schedules"}:
        data = data["schedules"]
    if not isinstance(data, list):
        raise CommandError(f"{path} must hold a list of schedules (or 'schedules:' and a list)")
    return data


# -- backfill ---------------------------------------------------------------------------------


def add_backfill(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "backfill",
        help="run a job's firings of a past window again; `backfill status` follows them",
        description=(
            "Each scheduled firing of JOB from --from up to --to is claimed by its own firing "
            'id and dispatched with "backfill": true, --rate a minute: a firing that ran is '
            "not run again, and a backfill sent twice runs nothing twice. The command shows "
            "the progress until the last is dispatched (Ctrl-C stops watching, not the "
            "backfill). `backfill status [JOB]` shows the backfills still going."
        ),
    )
    parser.add_argument("job", metavar="JOB", help="the job (or `status`)")
    parser.add_argument("status_job", metavar="STATUS_JOB", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--from", dest="start", metavar="INSTANT", help="the window's start")
    parser.add_argument("--to", dest="end", metavar="INSTANT", help="its end (not included)")
    parser.add_argument(
        "--rate", type=int, metavar="N", help="firings dispatched a minute (default 60)"
    )
    parser.add_argument(
        "--no-wait", action="store_true", help="start it and return, without the progress bar"
    )
    add_operator(parser)
    add_reason(parser)
    add_where(parser, table=False, function=True)


def backfill(args: argparse.Namespace, context: Context) -> int:
    if args.job == "status" and args.start is None and args.end is None:
        return _backfill_status(args, context)
    if args.status_job is not None:
        raise CommandError(f"unexpected {args.status_job!r}: backfill takes one JOB", 2)
    if args.start is None or args.end is None:
        raise CommandError("give the window: --from INSTANT --to INSTANT", 2)
    event: dict[str, Any] = {
        "backfill": args.job,
        "from": args.start,
        "to": args.end,
        "operator": None,
    }
    if args.rate is not None:
        event["rate"] = args.rate
    started = _ask(args, context, "backfill", event)
    if args.json and args.no_wait:
        context.print(json.dumps(started, indent=2))
        return EXIT_OK
    if not isinstance(started, Mapping) or "id" not in started:
        raise CommandError(f"the ticker answered {json.dumps(started)[:200]}")
    if not args.json:
        context.print(
            f"Backfill {started['id']}: {plural(started['total'], 'firing')} of {args.job} "
            f"from {started['from']} to {started['to']}, {started['rate']} a minute, by "
            f"{started['operator']}."
        )
        say_regions(context, started)
    if args.no_wait:
        return EXIT_OK
    return _follow(args, context, started)


def _follow(args: argparse.Namespace, context: Context, started: Mapping[str, Any]) -> int:
    """Draw the backfill's progress until its last firing is dispatched."""
    ident, total = started["id"], int(started["total"])
    event = {"backfillStatus": {"job": args.job}}
    last: Mapping[str, Any] | None = started
    try:
        while last is not None:
            _bar(context, total - int(last["pending"]), total, last.get("nextDue"))
            context.sleep(PROGRESS_EVERY)
            answer = _ask(args, context, "backfill", dict(event))
            found = [b for b in answer.get("backfills", []) if b.get("id") == ident]
            last = found[0] if found else None
    except KeyboardInterrupt:
        context.err.write("\n")
        context.warn(f"Stopped watching: backfill {ident} goes on (`backfill status {args.job}`).")
        return EXIT_OK
    _bar(context, total, total, None)
    context.err.write("\n")
    if args.json:
        context.print(json.dumps({**started, "pending": 0, "done": total}, indent=2))
    else:
        context.print(f"Backfill {ident}: all {plural(total, 'firing')} dispatched or found run.")
    return EXIT_OK


def _bar(context: Context, done: int, total: int, next_due: object) -> None:
    filled = _BAR * done // total if total else _BAR
    after = f", next due {next_due}" if next_due else ""
    context.err.write(f"\r[{'#' * filled}{'.' * (_BAR - filled)}] {done}/{total}{after}   ")
    context.err.flush()


def _backfill_status(args: argparse.Namespace, context: Context) -> int:
    asked = {} if args.status_job is None else {"job": args.status_job}
    answer = _ask(args, context, "backfill status", {"backfillStatus": asked})
    if args.json:
        context.print(json.dumps(answer, indent=2))
        return EXIT_OK
    found = answer.get("backfills", []) if isinstance(answer, Mapping) else []
    rows = [
        [
            str(b.get("id")),
            f"{b.get('done')}/{b.get('total')} done",
            f"{b.get('from')} to {b.get('to')}",
            f"{b.get('rate')}/min",
            f"next {b.get('nextDue')}",
            f"by {b.get('operator')}",
        ]
        for b in found
    ]
    for line in columns(rows):
        context.print(line)
    what = f" of {args.status_job}" if args.status_job else ""
    context.print(f"{plural(len(found), 'backfill')}{what} with firings left.")
    return EXIT_OK if isinstance(answer, Mapping) else EXIT_FAILED


# -- rerun ------------------------------------------------------------------------------------


def add_rerun(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "rerun",
        help="run a past firing again, with its scheduled time, through the deployed ticker",
        description=(
            "Invoke the ticker with a rerun event: the firing runs again as a manual run (a "
            "firing id of its own, recorded with the operator, on a region on standby too) "
            "whose target receives the original's scheduledTime and 'reruns': the firing id it "
            "repeats. The job's parameters are today's, with --parameters merged over them."
        ),
    )
    parser.add_argument(
        "firing",
        metavar="FIRING_ID",
        help="the firing id history shows, e.g. nightly-export@2026-11-30T02:00:00Z",
    )
    add_operator(parser)
    add_reason(parser)
    add_parameters(parser)
    add_where(parser, table=False, function=True)


def rerun(args: argparse.Namespace, context: Context) -> int:
    try:  # checked here too: a firing id or parameters refused before any call
        original = past_firing(args.firing, context.clock.now())
        check_sendable(args.parameters or {})
    except EventError as exc:
        return context.fail("rerun", str(exc))
    event: dict[str, Any] = {"rerun": original.firing_id, "operator": None}
    if args.parameters:
        event["parameters"] = args.parameters
    answer = _ask(args, context, "rerun", event)
    if args.json:
        context.print(json.dumps({"event": event, "answer": answer}, indent=2))
    elif isinstance(answer, Mapping):
        context.print(
            f"Firing {original.firing_id} run again by {answer.get('operator')}: "
            f"{answer.get('status')} - firing {answer.get('firingId')}"
        )
        if answer.get("mode") == "standby":
            context.print(
                "  (this region is on standby: the operator's run went ahead all the same)"
            )
        rows = [
            [f"  {key}", value if isinstance(value, str) else json.dumps(value)]
            for key, value in answer.items()
        ]
        for line in columns(rows):
            context.print(line)
    failed = isinstance(answer, Mapping) and answer.get("status") == "FAILED"
    if failed:
        return context.fail("rerun", "the dispatch failed: see the ticker's log", EXIT_FAILED)
    return EXIT_OK
