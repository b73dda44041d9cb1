"""``plan``: what deploying a cron file would change, before ``sam deploy`` (or ``aws s3 cp``).

FILE is compared with the cron file each region's ticker reads now (where.py: ``--stack``,
``--cron-file``, ``CRON_FILE``), in every region of ``--regions``: the jobs added, removed and
changed, key by key (:mod:`mini_scheduler.jobs.compare`); a changed schedule's next firings
before and after; the firings of the next 24 hours that appear or disappear; and the runtime
schedules of the region (its state table) that a new job takes the name of, which the tick
then drops (cron.yaml wins). Regions with the same plan are shown together.

Exit codes are terraform's ``plan -detailed-exitcode``: 0 nothing differs in any region, 2
something does, 1 an error (FILE does not load, a stack or a cron file that cannot be read, a
bad option): a usage error exits 1 here, so that 2 always means a change.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, CommandError, Context
from mini_scheduler.cli.render import level_tag, plural, utc_iso
from mini_scheduler.cli.suggest import SuggestingParser
from mini_scheduler.cli.where import (
    add_where,
    claims_for,
    each_region,
    load_cron,
    many_regions,
    resolve,
)
from mini_scheduler.errors import ConfigurationError, CronFileError
from mini_scheduler.fleet import Outcome
from mini_scheduler.jobs import DEFAULT_TIMEZONE, CronFile
from mini_scheduler.jobs.compare import Change, JobChange, Plan, compare
from mini_scheduler.jobs.locations import CronFileSource
from mini_scheduler.jobs.text import words

EXIT_CHANGES: Final = 2
"""Something differs (terraform's ``-detailed-exitcode``)."""
_SIGNS: Final = {"add": "+", "change": "~", "remove": "-"}


def add_plan(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "plan",
        help="what deploying a cron file would change: jobs added, removed, changed",
        description=(
            "Compare FILE with the cron file each region's ticker reads now (--stack), and "
            "print, job by job, what is added, removed or changed, key by key (a mapping by "
            "its keys, never its values); for a changed schedule its next firings before and "
            "after; the firings of the next 24 hours that appear or disappear; and the runtime "
            "schedules a new job's name would shadow. Exit 0 when nothing differs in any "
            "region, 2 when something does, 1 on an error (a usage error too)."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE", help="the cron file to deploy: a path, file:<path> or s3://..."
    )
    add_where(parser, many_regions=True, cron_file=True)
    if isinstance(parser, SuggestingParser):  # its usage error must not read as a change
        parser.usage_code = EXIT_FAILED


def plan(args: argparse.Namespace, context: Context) -> int:
    """Every error exits 1: 2 is a change."""
    try:
        return _plan(args, context)
    except (CommandError, ConfigurationError) as exc:
        raise CommandError(str(exc), EXIT_FAILED) from exc


def _plan(args: argparse.Namespace, context: Context) -> int:
    local = _load_local(args.file, context)
    regions = many_regions(args, context)
    start = context.clock.now().astimezone(UTC)
    if len(regions) == 1:  # its error is the command's
        outcomes = [Outcome(regions[0], True, _region(args, context, regions[0], local, start))]
    else:  # a region that fails is reported, and the others shown
        outcomes = each_region(regions, lambda r: _region(args, context, r, local, start))
    reports = [_region_json(o) for o in outcomes]
    changed = any(report.get("changes") for report in reports)
    if args.json:
        out = {"file": local.source, "from": utc_iso(start), "changes": changed}
        context.print(json.dumps(out | {"regions": reports}, indent=2))
    else:
        _text(context, outcomes)
    if not all(o.ok for o in outcomes):
        return EXIT_FAILED
    return EXIT_CHANGES if changed else EXIT_OK


def _load_local(location: str, context: Context) -> CronFile:
    """FILE, read as the ticker reads its own; its problems on stderr; CommandError when an
    entry does not load (nothing is compared with a file that would not deploy whole)."""
    zone = context.environ.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
    try:
        cron_file = CronFileSource(location, default_timezone=zone).load()
    except CronFileError as exc:
        raise CommandError(str(exc)) from exc
    for problem in cron_file.problems:
        context.warn(f"{level_tag(problem.level)} {problem.message}")
    if not cron_file.ok:
        raise CommandError(
            f"{cron_file.source} does not load ({plural(cron_file.skipped, 'entry', 'entries')} "
            "skipped, errors above): nothing compared; `mini-scheduler validate` checks it"
        )
    return cron_file


def _region(
    args: argparse.Namespace, context: Context, region: str, local: CronFile, start: datetime
) -> dict[str, Any]:
    """One region's plan; the runtime schedules are read only when a job is added."""
    where = resolve(args, context, region)
    deployed = load_cron(context, where)
    found = compare(deployed, local, start)
    added = set(found.added_names())
    schedules = claims_for(context, where).schedules() if added else ()
    shadowed = [
        {
            "name": definition.name,
            "operator": definition.operator,
            "createdAt": utc_iso(definition.created_at),
        }
        for definition in schedules
        if definition.name in added
    ]
    return {
        "stack": where.stack,
        "deployed": deployed.source,
        "plan": found,
        "shadowedSchedules": shadowed,
    }


def _region_json(outcome: Outcome) -> dict[str, Any]:
    if not outcome.ok:
        return {"region": outcome.region, "ok": False, "error": outcome.error}
    fields = outcome.fields
    found: Plan = fields["plan"]
    return {
        "region": outcome.region,
        "ok": True,
        "stack": fields["stack"],
        "deployed": fields["deployed"],
        "changes": found.changes,
        **found.to_json(),
        "shadowedSchedules": fields["shadowedSchedules"],
    }


# -- text ------------------------------------------------------------------------------------


def _text(context: Context, outcomes: Sequence[Outcome]) -> None:
    """Each group of regions whose plans are the same, once; each region not read, on stderr."""
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        if outcome.ok:
            groups.setdefault(_same_key(outcome), []).append(outcome)
        else:
            context.warn(f"mini-scheduler plan: {outcome.region} not read - {outcome.error}")
    for members in groups.values():
        for line in _group_lines(members):
            context.print(line)


def _same_key(outcome: Outcome) -> str:
    """What two regions must share to be shown as one: the stack (or the file read, without
    one) and the whole plan."""
    fields = outcome.fields
    where = fields["stack"] or fields["deployed"]
    plan_json = fields["plan"].to_json()
    return json.dumps([where, plan_json, fields["shadowedSchedules"]], sort_keys=True)


def _group_lines(members: Sequence[Outcome]) -> list[str]:
    fields = members[0].fields
    found: Plan = fields["plan"]
    where = f"stack {fields['stack']}" if fields["stack"] else fields["deployed"]
    regions = ", ".join(o.region for o in members)
    lines = [f"{regions} ({where}): {_summary(found)}"]
    for job in found.jobs:
        lines += _job_lines(job)
    lines += [f"  ~ {_change_text(change)}" for change in found.settings]
    if found.changes:
        lines.append(
            f"  firings in the next 24 hours: {found.appear:,} appear, "
            f"{found.disappear:,} disappear"
        )
    for schedule in fields["shadowedSchedules"]:
        lines.append(
            f"  a runtime schedule named {schedule['name']} exists (made by "
            f"{schedule['operator']}): the new job would shadow it, and the tick drop it"
        )
    return lines


def _summary(found: Plan) -> str:
    if not found.changes:
        return f"no change ({plural(found.unchanged, 'job')})"
    counts = [
        f"{found.count('add')} to add",
        f"{found.count('change')} to change",
        f"{found.count('remove')} to remove",
    ]
    if found.settings:
        counts.append(plural(len(found.settings), "setting") + " to change")
    return ", ".join(counts)


def _job_lines(job: JobChange) -> list[str]:
    sign = _SIGNS[job.action]
    if job.action != "change":
        disabled = "  (disabled)" if not job.job.enabled else ""
        return [f"  {sign} {job.name}  {job.job.service}  {job.job.schedule}{disabled}"]
    lines = [f"  {sign} {job.name}"]
    lines += [f"      {_change_text(change)}" for change in job.fields]
    if job.timing:
        lines.append(f"      next firings before: {_instants(job.before)}")
        lines.append(f"      next firings after:  {_instants(job.after)}")
    return lines


def _change_text(change: Change) -> str:
    if not change.mapping:
        return f"{change.key}: {_value(change.before)} -> {_value(change.after)}"
    parts = [
        f"{what} {words(list(paths))}"
        for what, paths in (
            ("added", change.added),
            ("removed", change.removed),
            ("changed", change.changed),
        )
        if paths
    ]
    return f"{change.key}: {'; '.join(parts) or 'changed'} (values not shown)"


def _value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _instants(moments: Sequence[datetime]) -> str:
    return ", ".join(utc_iso(at) for at in moments) or "none"
