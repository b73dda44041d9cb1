"""The operator's read-only commands on a deployed stack: ``jobs`` (each job's next firing, last
run and pause) and ``history`` (runs newest first: a job's, or every job's in every region
given, merged, filtered by ``--since`` and ``--status``)."""

from __future__ import annotations

import argparse
import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler import fleet
from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.render import (
    columns,
    instant,
    plural,
    print_read,
    run_note,
    span,
    took,
    utc_stamp,
    wall_time,
)
from mini_scheduler.cli.where import (
    Where,
    add_where,
    claims_for,
    cron_source,
    each_region,
    load_cron,
    many_regions,
    one_region,
    resolve,
)
from mini_scheduler.cron.zones import get_zone
from mini_scheduler.errors import CronFileError
from mini_scheduler.fleet import Outcome, Placed
from mini_scheduler.jobs import CronFile, name_problem
from mini_scheduler.jobs.spread import next_start
from mini_scheduler.model import RunStatus, iso_seconds, parse_instant

if TYPE_CHECKING:
    from mini_scheduler.claims.base import ClaimStore
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
        upcoming = next_start(job, now) if job.enabled else None
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

_DURATION: Final = re.compile(r"(?:\d{1,6}[smhdw])+")
_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_STATUSES: Final = ", ".join(status.value for status in RunStatus)


def _history_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_HISTORY:
        raise argparse.ArgumentTypeError(f"give 1 to {MAX_HISTORY}, not {value}")
    return value


def since_option(text: str) -> timedelta | datetime:
    """``--since``: a span back from now (``12h``, ``30m``, ``2d``, ``1h30m``) or an instant."""
    value = text.strip()
    if _DURATION.fullmatch(value):
        seconds = sum(
            int(n) * _UNIT_SECONDS[unit] for n, unit in re.findall(r"(\d+)([smhdw])", value)
        )
        if seconds == 0:
            raise argparse.ArgumentTypeError(f"{text!r} is no time at all: e.g. 12h")
        return timedelta(seconds=seconds)
    try:
        return instant(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"not a span (e.g. 12h, 30m, 2d, 1h30m) nor an ISO 8601 time "
            f"(e.g. 2026-11-30T02:00:00Z): {text!r}"
        ) from None


def _statuses(text: str) -> list[RunStatus]:
    found: list[RunStatus] = []
    for part in text.split(","):
        name = part.strip().upper()
        if not name:
            continue
        if name not in RunStatus.__members__:
            raise argparse.ArgumentTypeError(f"not a run status: {part.strip()!r} ({_STATUSES})")
        found.append(RunStatus[name])
    if not found:
        raise argparse.ArgumentTypeError(f"name a status: {_STATUSES}")
    return found


def add_history(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "history",
        help="runs, newest first: of a job, or of every job, in one region or several",
        description=(
            "Print run records from the state table, newest first: of one job (JOB or --job), "
            "or of every job of the cron file and every runtime schedule, in each region given, "
            "merged. One Query per job and region, each reading at most --limit runs; "
            "--since and --status keep the runs that match. A name with runs has a history, "
            "defined or not; a name without runs is looked up in the region's runtime "
            "schedules and the cron file: a name in neither is an error."
        ),
    )
    parser.add_argument("job", metavar="JOB", nargs="?", help="one job's runs (or --job)")
    parser.add_argument("--job", dest="job_option", metavar="JOB", help="one job's runs")
    parser.add_argument(
        "--since",
        type=since_option,
        metavar="WHEN",
        help="runs scheduled since: a span back from now (12h, 30m, 2d) or an ISO 8601 time",
    )
    parser.add_argument(
        "--status",
        type=_statuses,
        action="append",
        metavar="S1,S2",
        help=f"only runs of these statuses ({_STATUSES}); may be repeated",
    )
    parser.add_argument(
        "--limit",
        "-n",
        type=_history_limit,
        default=20,
        help="how many runs to show, and to read per job and region (default 20)",
    )
    add_where(parser, many_regions=True, cron_file=True)


def _check_job_known(job: str, context: Context, where: Where) -> None:
    """A job with no runs must be a runtime schedule of the region or in the cron file the CLI
    reads: else the name is wrong (CommandError, a usage error, with the nearest name in the
    file)."""
    definition = claims_for(context, where).schedule(job)
    if definition is not None and definition.live:
        return
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


@dataclass(frozen=True, slots=True)
class _Found:
    """A run, the region whose table holds it, and its scheduled instant (for the merge)."""

    region: str
    run: RunRecord
    at: datetime


@dataclass(frozen=True, slots=True)
class _Filter:
    since: datetime | None
    statuses: frozenset[RunStatus]
    limit: int

    def keeps(self, found: _Found) -> bool:
        if self.since is not None and found.at < self.since:
            return False
        return not self.statuses or found.run.status in self.statuses


def _scheduled(run: RunRecord) -> datetime:
    try:
        return parse_instant(run.scheduled_time)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)


def _job_names(context: Context, where: Where, claims: ClaimStore) -> list[str]:
    """Every job of the cron file, then every runtime schedule (the region's)."""
    names = [job.name for job in load_cron(context, where).jobs]
    schedules = {definition.name for definition in claims.schedules()}
    return names + sorted(schedules - set(names))


def _read_region(
    context: Context, args: argparse.Namespace, region: str, job: str | None, keep: _Filter
) -> dict[str, Any]:
    """One region's runs that ``keep`` keeps: one history Query per job; and the jobs whose
    Query was cut by the limit before it reached ``--since`` (older runs left unread)."""
    where = resolve(args, context, region)
    claims = claims_for(context, where)
    names = [job] if job else _job_names(context, where, claims)
    found: list[_Found] = []
    cut: list[dict[str, Any]] = []
    for name in names:
        runs = claims.history(name, keep.limit)
        read = [_Found(region, run, _scheduled(run)) for run in runs]
        found += [item for item in read if keep.keeps(item)]
        if len(runs) == keep.limit and (keep.since is None or read[-1].at >= keep.since):
            cut.append({"region": region, "job": name, "readBackTo": iso_seconds(read[-1].at)})
    return {"where": where, "found": found, "jobs": names, "cut": cut}


def history(args: argparse.Namespace, context: Context) -> int:
    job: str | None = args.job or args.job_option
    if args.job and args.job_option and args.job != args.job_option:
        return context.fail("history", f"two jobs given: {args.job} and --job {args.job_option}")
    if job is not None:
        problem = name_problem(job)
        if problem:
            return context.fail("history", f"not a job name: {problem}")
    regions = many_regions(args, context)
    since = args.since
    if isinstance(since, timedelta):
        since = context.clock.now().astimezone(UTC) - since
    statuses = frozenset(s for given in args.status or () for s in given)
    keep = _Filter(since, statuses, args.limit)
    if len(regions) == 1:  # its error is the command's
        outcomes = [Outcome(regions[0], True, _read_region(context, args, regions[0], job, keep))]
    else:  # a region that fails is reported, and the others shown
        outcomes = each_region(regions, lambda r: _read_region(context, args, r, job, keep))
    read = [o for o in outcomes if o.ok]
    found = fleet.newest_first(Placed(f.region, f.run) for o in read for f in o.fields["found"])
    if job and not found and len(read) == 1 and not keep.since and not keep.statuses:
        _check_job_known(job, context, read[0].fields["where"])
    if job and len(regions) == 1 and read:
        _one_job(context, args, job, read[0].fields["where"], [f.run for f in found[: keep.limit]])
    else:
        _merged(context, args, job, outcomes, found, keep)
    return EXIT_FAILED if len(read) < len(outcomes) else EXIT_OK


def _one_job(
    context: Context, args: argparse.Namespace, job: str, where: Where, runs: list[RunRecord]
) -> None:
    """One job in one region: the table ``history JOB`` has always printed."""
    if args.json:
        report = {
            "job": job,
            "region": where.region,
            "table": where.table,
            "runs": [run.to_json() for run in runs],
        }
        context.print(json.dumps(report, indent=2))
        return
    if not runs:
        context.print(f"No runs recorded for {job} in table {where.table} ({where.region}).")
        return
    rows = [["SCHEDULED", "STATUS", "STARTED", "ENDED", "TOOK", "ORIGIN", "NOTE"]]
    rows.extend(
        [
            run.scheduled_time.replace("T", " "),
            str(run.status),
            utc_stamp(run.started_at or run.claimed_at),
            utc_stamp(run.ended_at),
            took(run),
            run.origin or "-",
            run_note(run),
        ]
        for run in runs
    )
    for line in columns(rows):
        context.print(line)
    more = " (the newest; --limit for more)" if len(runs) == args.limit else ""
    context.print(f"{plural(len(runs), 'run')} of {job} in {where.region}{more}")


def _merged(
    context: Context,
    args: argparse.Namespace,
    job: str | None,
    outcomes: list[Outcome],
    found: list[Placed],
    keep: _Filter,
) -> None:
    """Every job (or one) in every region given, merged newest first, with a REGION column."""
    shown = found[: keep.limit]
    cut = [item for o in outcomes if o.ok for item in o.fields["cut"]]
    if args.json:
        report = {
            "job": job,
            "since": iso_seconds(keep.since) if keep.since else None,
            "statuses": sorted(str(s) for s in keep.statuses),
            "limit": keep.limit,
            "regions": [
                {"region": o.region, "ok": True, "table": o.fields["where"].table}
                | ({} if job else {"jobs": len(o.fields["jobs"])})
                if o.ok
                else {"region": o.region, "ok": False, "error": o.error}
                for o in outcomes
            ],
            "runs": [{"region": f.region, **f.run.to_json()} for f in shown],
            "more": len(found) > len(shown),
            "cutByLimit": cut,
        }
        context.print(json.dumps(report, indent=2))
        return
    rows = [["SCHEDULED", "REGION", "JOB", "STATUS", "STARTED", "TOOK", "FIRING", "NOTE"]]
    rows.extend(
        [
            f.run.scheduled_time.replace("T", " "),
            f.region,
            f.run.job,
            str(f.run.status),
            utc_stamp(f.run.started_at or f.run.claimed_at),
            took(f.run),
            f.run.firing_id,
            run_note(f.run),
        ]
        for f in shown
    )
    print_read(context, "history", bool(shown), rows, outcomes)
    _summary(context, job, outcomes, found, shown, keep, cut)


def _summary(
    context: Context,
    job: str | None,
    outcomes: list[Outcome],
    found: list[Placed],
    shown: list[Placed],
    keep: _Filter,
    cut: list[dict[str, Any]],
) -> None:
    read = [o for o in outcomes if o.ok]
    what = [",".join(sorted(str(s) for s in keep.statuses))] if keep.statuses else []
    if keep.since:
        what.append(f"since {utc_stamp(keep.since)}")
    matching = f" ({' '.join(what)})" if what else ""
    names = {name for o in read for name in o.fields["jobs"]}
    of = f"of {job}" if job else f"of {plural(len(names), 'job')}"
    places = ", ".join(o.region for o in read) or "no region"
    more = (
        f", the newest {len(shown)} of {len(found)}: --limit for more"
        if found[len(shown) :]
        else ""
    )
    context.print(f"{plural(len(shown), 'run')}{matching} {of} in {places}{more}")
    if cut:
        jobs = ", ".join(f"{c['job']} ({c['region']}, back to {c['readBackTo']})" for c in cut)
        context.print(
            f"Read only the newest {keep.limit} runs of {jobs}: older runs that match may be "
            "left out - raise --limit or narrow --since."
        )
