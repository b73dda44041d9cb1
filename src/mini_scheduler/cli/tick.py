"""``tick``: one tick at a given minute, as a dry run (what the ticker would do, nothing
written) or, with ``--execute``, for real."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, CommandError, Context
from mini_scheduler.cli.render import columns, instant, level_tag, plural, utc_stamp
from mini_scheduler.cli.where import (
    Where,
    add_where,
    claims_for,
    cron_source,
    environment_for,
    one_region,
    resolve,
    settings_for,
)
from mini_scheduler.config import Settings
from mini_scheduler.errors import CronFileError, EventError
from mini_scheduler.jobs import CronFile
from mini_scheduler.jobs.locations import CronFileSource
from mini_scheduler.model import floor_minute, iso_seconds
from mini_scheduler.tick.ticker import check_not_ahead

if TYPE_CHECKING:
    from mini_scheduler.tick.dryrun_report import Action, DryRun


def _minute(text: str) -> datetime:
    return floor_minute(instant(text))


def add_tick(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "tick",
        help="one tick at a given minute: a dry run, or --execute",
        description=(
            "Show what the ticker would do for one minute: the firings it would claim and "
            "dispatch, those it would skip (standby, paused, misfire and overlap policies, "
            "firings already recorded) and the open runs its sweep would close. Nothing is "
            "written. With --execute, run that tick for real (the minute must have begun)."
        ),
    )
    parser.add_argument(
        "--at",
        type=_minute,
        metavar="ISO",
        help="the minute (default the current one; without an offset it is UTC)",
    )
    parser.add_argument("--execute", action="store_true", help="run the tick for real")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="with a dry run, show what the ticker logged"
    )
    add_where(parser, cron_file=True, parameter=True, environment_name=True)


def tick(args: argparse.Namespace, context: Context) -> int:
    now = context.clock.now().astimezone(UTC)
    minute: datetime = args.at or floor_minute(now)
    region = one_region(args, context)
    where = resolve(args, context, region)
    settings = settings_for(context, where)
    if where.environment_name is None:
        context.warn(
            f"{level_tag('warning')} the environment name of {region} is not known: taken as "
            f"{settings.environment_name} (give --environment-name or set ENVIRONMENT_NAME)"
        )
    source = cron_source(context, where)
    try:
        if args.execute:
            return _execute_tick(args, context, settings, source, minute, now)
        from mini_scheduler.tick.dryrun import dry_run

        store = environment_for(context, where)
        plan = dry_run(
            minute,
            settings=settings,
            cron=_reporting(context, source),
            claims=claims_for(context, where),
            environment=store,
            now=now,
        )
    except CronFileError as exc:
        _missing_cron_hint(exc, where)
        raise
    if args.json:
        context.print(json.dumps(plan.to_json(), indent=2))
    else:
        _print_plan(context, plan, store.name, verbose=args.verbose)
    return EXIT_FAILED if plan.summary.error else EXIT_OK


def _missing_cron_hint(exc: CronFileError, where: Where) -> None:
    if where.cron_file is None and "not found" in str(exc):
        raise CommandError(
            f"{exc}: give --cron-file (the file the ticker reads) or set CRON_FILE"
        ) from exc


def _reporting(context: Context, source: CronFileSource) -> Callable[[], CronFile]:
    """``source.load`` that prints the file's problems on stderr, once."""
    shown: set[str] = set()

    def load() -> CronFile:
        cron_file = source.load()
        if cron_file.version not in shown:
            shown.add(cron_file.version)
            for problem in cron_file.problems:
                context.warn(f"{level_tag(problem.level)} {problem.message}")
        return cron_file

    return load


_ACTION_TEXT: Final = {
    "dispatch": "dispatch",
    "skip": "record SKIPPED",
    "skip-range": "record SKIPPED",
    "already-recorded": "leave",
    "standby": "leave (standby)",
    "paused": "leave (paused)",
    "time-out": "mark TIMED_OUT",
    "take-over": "take over, dispatch",
    "fail": "mark FAILED",
    "wait": "wait (previous run open)",
    "cancel": "stop, mark FAILED (cancelled)",
}


ROWS_PER_JOB: Final = 5
"""A dry run's table shows a job's first five actions, then one line for the rest when there are
two or more (a long gap holds thousands of a frequent job's firings); --json lists each."""


def _action_row(action: Action) -> list[str]:
    detail: list[str] = []
    if action.kind == "dispatch":
        detail.append(f"to {action.service} at {utc_stamp(action.at)[11:]}")
    if action.kind == "skip-range":
        detail.append(f"{action.count} firings to {utc_stamp(action.until)}")
    if action.misfire:
        detail.append("missed")
    if action.reason:
        detail.append(action.reason)
    return [
        utc_stamp(action.scheduled),
        action.job,
        _ACTION_TEXT.get(action.kind, action.kind),
        "; ".join(detail),
    ]


def _summary_row(rest: Sequence[Action]) -> list[str]:
    """One line for a job's actions past the first five: how many, the first and last, and how
    many of each kind."""
    kinds: dict[str, int] = {}
    for action in rest:
        text = _ACTION_TEXT.get(action.kind, action.kind)
        kinds[text] = kinds.get(text, 0) + 1
    counted = ", ".join(f"{text} {count:,}" for text, count in kinds.items())
    return [
        utc_stamp(rest[0].scheduled),
        rest[0].job,
        f"{len(rest):,} more",
        f"to {utc_stamp(rest[-1].scheduled)}: {counted} (--json lists each)",
    ]


def _plan_rows(actions: Sequence[Action]) -> list[list[str]]:
    """The table's rows, in the plan's order: each job's first actions, and past
    :data:`ROWS_PER_JOB` one summary line in place of the rest."""
    by_job: dict[str, list[Action]] = {}
    for action in actions:
        by_job.setdefault(action.job, []).append(action)
    rows: list[list[str]] = []
    seen: dict[str, int] = {}
    for action in actions:
        mine = by_job[action.job]
        index = seen[action.job] = seen.get(action.job, -1) + 1
        if len(mine) <= ROWS_PER_JOB + 1 or index < ROWS_PER_JOB:
            rows.append(_action_row(action))
        elif index == ROWS_PER_JOB:
            rows.append(_summary_row(mine[ROWS_PER_JOB:]))
    return rows


def _print_plan(context: Context, plan: DryRun, store: str, *, verbose: bool) -> None:
    summary = plan.summary
    start, end = plan.window
    context.print(
        f"Dry run of the tick of {iso_seconds(plan.minute)} in {plan.region}: nothing written."
    )
    if summary.active_environment is None:
        context.print(
            f"  environment  {summary.environment}; the active environment cannot be read "
            f"from {store} ({summary.error}): the tick fails closed"
        )
    else:
        context.print(
            f"  environment  {summary.environment}; active environment "
            f"{summary.active_environment} ({store}): this region is {summary.mode}"
        )
    context.print(f"  window       {utc_stamp(start)} to {utc_stamp(end)}")
    watermark = utc_stamp(plan.watermark) if plan.watermark else "none yet (a region's first tick)"
    moved = f"; it would move to {utc_stamp(plan.watermark_after)}" if plan.watermark_after else ""
    context.print(f"  watermark    {watermark}{moved}")
    if summary.note:
        context.print(f"  note         {summary.note}")
    context.print()
    if plan.actions:
        rows = [["SCHEDULED", "JOB", "ACTION", "DETAIL"], *_plan_rows(plan.actions)]
        for line in columns(rows):
            context.print(line)
    else:
        context.print("No firing in this minute.")
    for p in plan.paused:
        context.print(
            f"Paused: {p.job} (by {p.operator}): {plural(p.firings, 'firing')} left alone."
        )
    if plan.disabled:
        context.print(f"Disabled in the cron file: {', '.join(plan.disabled)}.")
    counts = summary.counts
    skipped = sum(int(v) for v in counts.get("skipped", {}).values())
    context.print(
        f"Would claim {counts.get('claimed', 0)}, dispatch {counts.get('dispatched', 0)}, "
        f"skip {skipped}; {counts.get('misfired', 0)} missed before the window."
    )
    if verbose and plan.log:
        context.print()
        context.print("What the ticker would log:")
        for line in plan.log:
            context.print(f"  {line}")
    context.print("Run it for real with --execute.")


def _writes_for(settings: Settings, context: Context) -> Settings:
    """The settings ``make run`` uses against an emulator: with a DynamoDB endpoint of its own
    (``AWS_ENDPOINT_URL``) and ``STATE_TABLE_BATCH_WRITES`` unset, one request a write, as
    moto needs (its PartiQL ignores conditions, and a moto server may fail the batch). One
    write a request is right on every endpoint; batching only saves requests."""
    from mini_scheduler.aws import endpoint_override

    unset = not context.environ.get("STATE_TABLE_BATCH_WRITES", "").strip()
    if unset and settings.batch_writes and endpoint_override(context.environ, "dynamodb"):
        return replace(settings, batch_writes=False)
    return settings


def _execute_tick(
    args: argparse.Namespace,
    context: Context,
    settings: Settings,
    source: CronFileSource,
    minute: datetime,
    now: datetime,
) -> int:
    try:
        check_not_ahead(minute, now, allowed=timedelta(0))  # the core's rule, with no leeway
    except EventError:
        return context.fail(
            "tick",
            f"{iso_seconds(minute)} has not begun: --execute runs a minute that has "
            "(drop --execute for a dry run)",
        )
    from mini_scheduler.wiring import build_ticker

    settings = _writes_for(settings, context)
    ticker = build_ticker(
        settings, clients=context.clients(settings.region), clock=context.clock, cron=source.load
    )
    from mini_scheduler.logs import package_logs

    console = logging.StreamHandler(context.err)
    console.setFormatter(logging.Formatter("%(levelname)-7s %(message)s"))
    with package_logs(console):
        summary = ticker.tick(minute)
    answer = summary.to_json()
    if args.json:
        context.print(json.dumps(answer, indent=2))
    else:
        counts = answer["counts"]
        skipped = ", ".join(f"{k} {v}" for k, v in counts["skipped"].items()) or "none"
        context.print(
            f"Tick of {answer['minute']} in {settings.region}: {answer['mode']} "
            f"(environment {answer['environment']}, active {answer['activeEnvironment']})"
        )
        context.print(
            f"  claimed {counts['claimed']}, dispatched {counts['dispatched']}, skipped "
            f"{skipped}, missed {counts['misfired']}, errors {counts['errors']}"
        )
        if summary.note:
            context.print(f"  note: {summary.note}")
    return EXIT_FAILED if summary.error or answer["counts"]["errors"] else EXIT_OK
