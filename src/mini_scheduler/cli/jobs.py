"""The operator's read-only commands on a deployed stack: ``jobs`` (each job's next firing, last
run and pause) and ``history`` (a job's runs, newest first)."""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.cli.context import EXIT_OK, EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.render import columns, plural, span, took, utc_stamp, wall_time
from mini_scheduler.cli.where import (
    Where,
    add_where,
    claims_for,
    cron_source,
    load_cron,
    one_region,
    resolve,
)
from mini_scheduler.cron.zones import get_zone
from mini_scheduler.errors import CronFileError
from mini_scheduler.jobs import CronFile, name_problem
from mini_scheduler.model import iso_seconds

if TYPE_CHECKING:
    from mini_scheduler.claims.records import RunRecord

MAX_HISTORY: Final = 1000


# -- jobs -----------------------------------------------------------------------------------


def add_jobs(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "jobs",
        help="each job: its next firing, its last run, paused or not",
        description=(
            "List the jobs of the cron file the ticker reads, each with its next firing (in "
            "the job's zone), the status of its last run and whether it is paused, as the "
            "region's state table records them."
        ),
    )
    add_where(parser, cron_file=True)


def jobs(args: argparse.Namespace, context: Context) -> int:
    region = one_region(args, context)
    where = resolve(args, context, region)
    claims = claims_for(context, where)
    cron_file = load_cron(context, where)
    now = context.clock.now().astimezone(UTC)
    paused = claims.control(f"{region}/{where.environment_name or 'prod'}").paused
    listed: list[dict[str, Any]] = []
    for job in cron_file.jobs:
        state = claims.job_state(job.name)
        upcoming = job.next_after(now) if job.enabled else None
        pause = paused.get(job.name)
        listed.append(
            {
                "job": job.name,
                "service": job.service,
                "schedule": job.schedule,
                "enabled": job.enabled,
                "next": upcoming,
                "zone": job.zone,
                "state": state,
                "pause": pause,
            }
        )
    strays = sorted(set(paused) - {job.name for job in cron_file.jobs})
    if args.json:
        context.print(json.dumps(_jobs_json(where, cron_file, listed, strays, paused), indent=2))
        return EXIT_OK
    for line in columns(_jobs_rows(listed, now)):
        context.print(line)
    for name in strays:
        context.print(f"(job {name} is paused by {paused[name].operator} but not in the cron file)")
    context.print(
        f"{plural(len(listed), 'job')} in {cron_file.source}; runs from table "
        f"{where.table} in {region}"
    )
    return EXIT_OK


def _jobs_rows(listed: list[dict[str, Any]], now: datetime) -> list[list[str]]:
    rows = [["JOB", "NEXT FIRING", "IN", "LAST RUN", "LAST STATUS", "PAUSED", "SERVICE"]]
    for item in listed:
        state, pause, upcoming = item["state"], item["pause"], item["next"]
        if not item["enabled"]:
            next_text, in_text = "disabled", "-"
        elif upcoming is None:
            next_text, in_text = "never again", "-"
        else:
            next_text, in_text = wall_time(upcoming, item["zone"]), span(upcoming - now)
        last_status = str(state.last_status) if state and state.last_status else "-"
        rows.append(
            [
                item["job"],
                next_text,
                in_text,
                utc_stamp(state.start if state else None),
                last_status,
                f"by {pause.operator}" if pause else "-",
                item["service"],
            ]
        )
    return rows


def _jobs_json(
    where: Where,
    cron_file: CronFile,
    listed: list[dict[str, Any]],
    strays: list[str],
    paused: Mapping[str, Any],
) -> dict[str, Any]:
    out_jobs = []
    for item in listed:
        state, pause, upcoming = item["state"], item["pause"], item["next"]
        local = upcoming.astimezone(get_zone(item["zone"])) if upcoming else None
        out_jobs.append(
            {
                "job": item["job"],
                "service": item["service"],
                "schedule": item["schedule"],
                "enabled": item["enabled"],
                "nextFiring": (
                    {
                        "utc": iso_seconds(upcoming),
                        "local": local.isoformat() if local else None,
                        "zone": item["zone"],
                        "abbreviation": local.tzname() if local else None,
                    }
                    if upcoming
                    else None
                ),
                "lastFiringId": state.last_firing_id if state else None,
                "lastStatus": str(state.last_status) if state and state.last_status else None,
                "lastStart": iso_seconds(state.start) if state and state.start else None,
                "lastEnd": iso_seconds(state.end) if state and state.end else None,
                "paused": pause is not None,
                "pausedBy": pause.operator if pause else None,
                "pausedAt": iso_seconds(pause.at) if pause and pause.at.tzinfo else None,
            }
        )
    return {
        "region": where.region,
        "table": where.table,
        "cronFile": cron_file.source,
        "jobs": out_jobs,
        "pausedNotInCronFile": [{"job": n, "pausedBy": paused[n].operator} for n in strays],
    }


# -- history --------------------------------------------------------------------------------


def _history_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_HISTORY:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_HISTORY}, not {value}")
    return value


def add_history(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "history",
        help="a job's runs, newest first",
        description=(
            "Print a job's run records from the state table, newest first. A job without runs "
            "is looked up in the cron file: a name in neither is an error."
        ),
    )
    parser.add_argument("job", metavar="JOB", help="the job's name")
    parser.add_argument(
        "--limit", "-n", type=_history_limit, default=20, help="how many runs (default 20)"
    )
    add_where(parser, cron_file=True)


def _run_note(run: RunRecord) -> str:
    parts: list[str] = []
    if run.manual:
        parts.append(f"manual run by {run.operator}" if run.operator else "manual run")
    if run.attempt > 1:
        parts.append(f"attempt {run.attempt}")
    if run.backfill:
        replaced = (run.replaced_skip or {}).get("reason")
        parts.append(f"backfill (was SKIPPED: {replaced})" if replaced else "backfill")
    if run.skipped_count is not None and run.skipped_until:
        parts.append(f"{run.skipped_count} firings to {run.skipped_until}")
    if run.reason:
        parts.append(run.reason)
    if run.timed_out_at is not None and not run.swept:
        parts.append(f"ended after it was marked TIMED_OUT at {utc_stamp(run.timed_out_at)}")
    if run.redrives:
        earlier = ", ".join(str(end.status) for end in run.earlier_ends)
        parts.append(f"redriven {run.redrives}x" + (f" after {earlier}" if earlier else ""))
    if run.error:
        parts.append(run.error.splitlines()[0][:200] if run.error.strip() else run.error)
    return "; ".join(parts) or "-"


def _check_job_known(job: str, context: Context, where: Where) -> None:
    """A job with no runs must be in the cron file the CLI reads: else the name is wrong
    (CommandError, a usage error, with the nearest name in the file)."""
    where_runs = f"table {where.table} ({where.region})"
    try:
        cron_file = cron_source(context, where).load()
    except CronFileError as exc:
        if where.cron_file is None and "not found" in str(exc):
            raise CommandError(
                f"no run of {job} in {where_runs}, and no cron file to tell whether it is a "
                f"job: {exc}: give --cron-file (the file the ticker reads) or set CRON_FILE",
                EXIT_USAGE,
            ) from exc
        raise
    if cron_file.job(job) is not None:
        return
    names = [known.name for known in cron_file.jobs]
    close = difflib.get_close_matches(job, names, n=1, cutoff=0.6)
    hint = f" - did you mean {close[0]}?" if close else ""
    raise CommandError(
        f"unknown job {job}: it is not in {cron_file.source} and {where_runs} holds no run of "
        f"it{hint}",
        EXIT_USAGE,
    )


def history(args: argparse.Namespace, context: Context) -> int:
    problem = name_problem(args.job)
    if problem:
        return context.fail("history", f"not a job name: {problem}")
    region = one_region(args, context)
    where = resolve(args, context, region)
    runs = list(claims_for(context, where).history(args.job, args.limit))
    if not runs:
        _check_job_known(args.job, context, where)
    if args.json:
        report = {
            "job": args.job,
            "region": region,
            "table": where.table,
            "runs": [run.to_json() for run in runs],
        }
        context.print(json.dumps(report, indent=2))
        return EXIT_OK
    if not runs:
        context.print(f"No runs recorded for {args.job} in table {where.table} ({region}).")
        return EXIT_OK
    rows = [["SCHEDULED", "STATUS", "STARTED", "ENDED", "TOOK", "ORIGIN", "NOTE"]]
    rows.extend(
        [
            run.scheduled_time.replace("T", " "),
            str(run.status),
            utc_stamp(run.started_at or run.claimed_at),
            utc_stamp(run.ended_at),
            took(run),
            run.origin or "-",
            _run_note(run),
        ]
        for run in runs
    )
    for line in columns(rows):
        context.print(line)
    more = " (the newest; --limit for more)" if len(runs) == args.limit else ""
    context.print(f"{plural(len(runs), 'run')} of {args.job} in {region}{more}")
    return EXIT_OK
