"""The audit trail from the command line: ``--reason`` and the caller's identity, sent with
every operator action (to the ticker in its event, or to the operator path the CLI builds for
a direct write), and ``audit``: the records of every region given, merged newest first.

The identity is the ARN STS GetCallerIdentity answers, asked once a command (``--local``:
``local:<user>``, make run's identity); an identity the CLI cannot learn is left out of the
record, which still names the operator. A region's trail is its stack's ``AuditLogGroupName``
(or ``AUDIT_LOG_GROUP``)."""

from __future__ import annotations

import argparse
import getpass
import json
from datetime import datetime, timedelta
from typing import Any

from mini_scheduler import fleet
from mini_scheduler.audit.base import MAX_REASON, READ_LIMIT, AuditRecord, check_reason
from mini_scheduler.audit.trail import Trail
from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.jobs import since_option
from mini_scheduler.cli.render import plural, print_read
from mini_scheduler.cli.where import (
    Where,
    add_where,
    caller_arn,
    each_region,
    many_regions,
    resolve,
)
from mini_scheduler.errors import EventError
from mini_scheduler.model import iso_seconds
from mini_scheduler.notes import utc_stamp

DEFAULT_SINCE = timedelta(days=7)
CLOCK_SKEW = timedelta(minutes=1)
"""How far past this machine's now ``--until`` reaches by default: a record just written by a
ticker whose clock is ahead is shown too."""


def add_reason(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reason",
        metavar="TEXT",
        help=f"why (at most {MAX_REASON} characters): kept in the audit trail, and on a manual run",
    )


def reason_of(args: argparse.Namespace) -> str | None:
    """``--reason``, checked (CommandError, exit 2, naming it)."""
    try:
        return check_reason(getattr(args, "reason", None))
    except EventError as exc:
        raise CommandError(f"--reason: {exc}", EXIT_USAGE) from exc


def identity_of(args: argparse.Namespace, context: Context, region: str) -> str | None:
    """The caller's identity: its ARN (one STS call), ``local:<user>`` with ``--local``, None
    when STS cannot say (the record then names the operator only)."""
    if getattr(args, "local", False):
        return f"local:{getpass.getuser()}"
    try:
        return caller_arn(context, region)
    except Exception:  # an identity unknown is not a reason to refuse the action
        return None


def asking(args: argparse.Namespace, context: Context, region: str) -> dict[str, str]:
    """What an operator's event carries for its audit record: ``reason`` and ``identity``."""
    reason = reason_of(args)
    identity = identity_of(args, context, region)
    out = {"reason": reason, "identity": identity}
    return {key: value for key, value in out.items() if value is not None}


def trail_for(context: Context, where: Where, via: str = "cli") -> Trail | None:
    """The audit trail of a region, for an action the CLI writes itself (pause, resume,
    failover); None when the stack names none (a stack deployed before it had one)."""
    if not where.audit_group:
        return None
    from mini_scheduler.audit.cloudwatch import CloudWatchAuditLog

    log = CloudWatchAuditLog(where.audit_group, lambda: context.clients(where.region)("logs"))
    return Trail(log, region=where.region, stack=where.stack, via=via)


def no_trail(context: Context, command: str, where: Where) -> None:
    """The warning for an action done where no audit trail is known."""
    context.warn(
        f"mini-scheduler {command}: warning: {where.region} has no audit trail (no stack output "
        "AuditLogGroupName, no AUDIT_LOG_GROUP): the action is not recorded"
    )


# -- audit ------------------------------------------------------------------------------------


def add_audit(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "audit",
        help="the operator actions recorded: who did what, when, why, newest first",
        description=(
            "Read the audit trail of every region given (each stack's AuditLogGroupName) and "
            "print its records merged newest first: when, the region, the action, the job, who "
            "(the operator and the identity the caller told), the state before and after, and "
            "the reason. Records are append-only and kept AuditRetentionDays (400 by default)."
        ),
    )
    parser.add_argument(
        "--since",
        type=since_option,
        metavar="WHEN",
        help="a span back from now (12h, 7d) or an ISO 8601 time (default 7d)",
    )
    parser.add_argument(
        "--until", type=since_option, metavar="WHEN", help="the end (default now), as --since"
    )
    parser.add_argument("--job", metavar="JOB", help="only the records of this job")
    parser.add_argument(
        "--actor", metavar="WHO", help="only this operator's (a name, an ARN or its last part)"
    )
    parser.add_argument(
        "--limit", type=int, default=100, metavar="N", help="at most N records (default 100)"
    )
    add_where(parser, many_regions=True, table=False)


def _moment(context: Context, value: timedelta | datetime | None, default: timedelta) -> datetime:
    now = context.clock.now()
    if value is None:
        return now - default
    return now - value if isinstance(value, timedelta) else value


def audit(args: argparse.Namespace, context: Context) -> int:
    if not 1 <= args.limit <= READ_LIMIT:
        return context.fail("audit", f"--limit: give 1 to {READ_LIMIT}, not {args.limit}")
    since = _moment(context, args.since, DEFAULT_SINCE)
    until = _moment(context, args.until, -CLOCK_SKEW)
    if since >= until:
        return context.fail("audit", f"--since {iso_seconds(since)} is not before --until")
    regions = many_regions(args, context)

    def read(region: str) -> dict[str, Any]:
        where = resolve(args, context, region, one_of=len(regions))
        trail = trail_for(context, where)
        if trail is None:
            raise CommandError(
                "no audit trail: stack output AuditLogGroupName (--stack) or AUDIT_LOG_GROUP"
            )
        found = trail.log.read(since, until, job=args.job, actor=args.actor, limit=args.limit)
        return {"group": trail.log.name, "records": found}

    outcomes = each_region(regions, read)
    records = fleet.merged(
        [o.fields["records"] for o in outcomes if o.ok], lambda r: (r.at, r.region, r.action)
    )
    shown: list[AuditRecord] = records[: args.limit]
    if args.json:
        _print_json(context, args, outcomes, shown, (since, until))
    else:
        _print_records(context, outcomes, shown, len(records))
    return EXIT_OK if all(o.ok for o in outcomes) else EXIT_FAILED


def _print_json(
    context: Context,
    args: argparse.Namespace,
    outcomes: list[fleet.Outcome],
    shown: list[AuditRecord],
    span: tuple[datetime, datetime],
) -> None:
    report = {
        "since": iso_seconds(span[0]),
        "until": iso_seconds(span[1]),
        "job": args.job,
        "actor": args.actor,
        "regions": [
            {"region": o.region, "ok": True, "logGroup": o.fields["group"]}
            if o.ok
            else {"region": o.region, "ok": False, "error": o.error}
            for o in outcomes
        ],
        "records": [r.to_json() for r in shown],
    }
    context.print(json.dumps(report, indent=2))


def change(record: AuditRecord) -> str:
    """The state before and after, in a few words (``paused: false -> true``)."""

    def short(state: Any) -> str:
        if state is None:
            return "-"
        text = json.dumps(state, sort_keys=True, separators=(",", ":"))
        return text if len(text) <= 60 else text[:57] + "..."

    if record.before is None and record.after is None:
        return "-"
    keys = set(record.before or {}) | set(record.after or {})
    if record.before is not None and record.after is not None and len(keys) == 1:
        (key,) = keys
        before, after = (record.before.get(key), record.after.get(key))
        return f"{key}: {json.dumps(before)} -> {json.dumps(after)}"
    return f"{short(record.before)} -> {short(record.after)}"


def _print_records(
    context: Context, outcomes: list[fleet.Outcome], shown: list[AuditRecord], found: int
) -> None:
    rows = [["WHEN", "REGION", "ACTION", "JOB", "WHO", "CHANGE", "REASON"]]
    rows.extend(
        [
            utc_stamp(r.at),
            r.region,
            r.action,
            r.job or r.subject or "-",
            r.operator + (f" ({r.identity})" if r.identity else ""),
            change(r),
            r.reason or "-",
        ]
        for r in shown
    )
    print_read(context, "audit", bool(shown), rows, outcomes)
    places = ", ".join(o.region for o in outcomes if o.ok) or "no region"
    more = f", the newest {len(shown)} of {found}: --limit for more" if found > len(shown) else ""
    context.print(f"{plural(len(shown), 'audit record')} in {places}{more}")
