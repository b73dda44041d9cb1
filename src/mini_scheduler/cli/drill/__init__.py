"""``failover --drill --to ENV``: rehearse a failover, and time it.

First the readiness checks (:mod:`.checks`): the stacks, who is active, the cron files, the
runtime schedules and pauses, the target's jobs and alarms. Without ``--yes`` that is all, and
nothing is written. With ``--yes`` and every check passed: the failover itself (the same
:func:`~mini_scheduler.cli.environment.switch` as ``failover --to ENV``, and the same report),
the watch for the first firing the target region claims after it (:mod:`.watch`), and, unless
``--stay``, the failover back to the environment active before, even when no firing came: a
drill leaves the deployment as it found it. The report says each step, and the drill passes
only when each did what it should.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, CommandError, Context
from mini_scheduler.cli.drill.checks import Readiness, readiness
from mini_scheduler.cli.drill.watch import FirstFiring, first_firing
from mini_scheduler.cli.environment import Switched, failover, print_failover, switch
from mini_scheduler.cli.render import columns, plural, utc_iso
from mini_scheduler.cli.where import claims_for, operator_name

DEFAULT_TIMEOUT: Final = 180.0  # seconds: three ticks of the target region


def failover_or_drill(args: argparse.Namespace, context: Context) -> int:
    """The ``failover`` command: a failover, or with ``--drill`` a drill, whose switches are
    the failover's own."""
    return drill(args, context) if args.drill else failover(args, context)


@dataclass(slots=True)
class _Drill:
    """What a drill did, step by step (None: not done)."""

    target: str
    ready: Readiness
    switched_at: datetime | None = None
    switched: Switched | None = None
    first: FirstFiring | None = None
    back: Switched | None = None
    notes: list[str] = field(default_factory=list)  # why a step failed or was not done

    @property
    def passed(self) -> bool:
        return (
            self.ready.ok
            and self.switched is not None
            and self.switched.ok
            and self.first is not None
            and (self.back is None or self.back.ok)
            and not self.notes
        )


def drill(args: argparse.Namespace, context: Context) -> int:
    refused = _refused(args)
    if refused:
        return context.fail("failover", refused)
    done = _Drill(args.to, readiness(args, context, args.to))
    if not args.json:
        _print_checks(context, args, done.ready)
    if args.yes and done.ready.ok:
        args = _with(args, operator=operator_name(args, context, args.regions[0]))
        _switch_and_watch(args, context, done)
        if not args.stay:
            _switch_back(args, context, done)
    if args.json:
        context.print(json.dumps(_to_json(args, done), indent=2))
    else:
        _print_verdict(context, args, done)
    if not args.yes:
        return EXIT_OK if done.ready.ok else EXIT_FAILED
    return EXIT_OK if done.passed else EXIT_FAILED


def _refused(args: argparse.Namespace) -> str | None:
    """Why the flags given cannot make a drill."""
    if getattr(args, "regions", None) is None:
        return "name every region with --regions R1,R2: a drill switches them all"
    if not args.stack:
        return "a drill checks a stack: give --stack NAME"
    if args.force or args.reason is not None:
        return "a drill switches to a known environment only: drop --force and --reason"
    if args.stay and not args.yes:
        return "--stay goes with --yes: without it a drill only checks"
    return None


def _with(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), **changes})


def _switch_and_watch(args: argparse.Namespace, context: Context, done: _Drill) -> None:
    """The failover to the target, and the watch in its region (when every region switched)."""
    ready = done.ready
    done.switched_at = context.clock.now()
    done.switched = switch(args, context)  # refused before any write: exit 2, as a failover
    if not args.json:
        context.print()
        context.print(f"Switch to {done.switched.target} at {utc_iso(done.switched_at)}:")
        print_failover(context, args, done.switched)
    if not done.switched.ok or ready.region is None or ready.where is None:
        done.notes.append("the switch failed: no firing watched")
        return
    timeout = args.timeout or DEFAULT_TIMEOUT
    if not args.json:
        context.print(f"Watching {ready.region} for its first firing, up to {timeout:g} s...")
    claims = claims_for(context, ready.where)
    done.first = first_firing(context, claims, ready.region, ready.names, done.switched_at, timeout)
    if done.first is None:
        done.notes.append(f"no firing in {ready.region} within {timeout:g} s of the switch")
    if not args.json:
        first = done.first
        context.print(
            f"First firing in {first.region}: {first.run.firing_id} (job {first.run.job}), "
            f"claimed {_seconds(first)} s after the switch."
            if first is not None
            else f"No firing in {ready.region} within {timeout:g} s of the switch."
        )


def _switch_back(args: argparse.Namespace, context: Context, done: _Drill) -> None:
    """The failover back to the environment active before the drill."""
    before = done.ready.before
    if before is None:  # the checks passed: they read it
        done.notes.append("not switched back: the environment active before is not known")
        return
    try:
        done.back = switch(_with(args, to=before), context)
    except CommandError as exc:
        done.notes.append(f"not switched back to {before}: {exc}")
        return
    if not args.json:
        context.print()
        context.print(f"Switch back to {done.back.target}:")
        print_failover(context, args, done.back)


def _print_checks(context: Context, args: argparse.Namespace, ready: Readiness) -> None:
    where = f" ({ready.region})" if ready.region else ""
    context.print(
        f"Drill: fail over to {args.to}{where}, stack {args.stack} in {', '.join(args.regions)}"
    )
    rows = [["CHECK", "RESULT", "DETAIL"]]
    rows += [[c.name, "ok" if c.ok else "FAILED", c.detail] for c in ready.checks]
    for line in columns(rows):
        context.print(line)


def _print_verdict(context: Context, args: argparse.Namespace, done: _Drill) -> None:
    ready = done.ready
    failed = ready.failed
    if not args.yes:
        if failed:
            context.print(f"{plural(len(failed), 'check')} failed. Nothing was written.")
        else:
            context.print(
                f"Ready. Nothing was written: add --yes to switch to {args.to}, time the first "
                f"firing in {ready.region} and switch back."
            )
        return
    if failed:
        context.print(f"{plural(len(failed), 'check')} failed: not switched. Nothing was written.")
        return
    context.print()
    verdict = "Drill passed" if done.passed else "Drill FAILED"
    if done.passed and done.first is not None:
        verdict += f": {done.first.region} took over in {_seconds(done.first)} s"
    why = "; ".join(done.notes)
    context.print(f"{verdict}{': ' + why if why else ''}; {_now(args, done)}.")


def _now(args: argparse.Namespace, done: _Drill) -> str:
    """Who is active once the drill is over, as its last line says it."""
    if done.back is not None:
        if done.back.ok:
            return f"{done.back.target} is active again"
        return f"the switch back to {done.back.target} failed (above): run it again"
    if done.switched is not None and done.switched.ok and args.stay:
        return f"{done.switched.target} stays active (--stay)"
    return "see each region above (mini-scheduler status)"


def _seconds(first: FirstFiring) -> str:
    return f"{first.after.total_seconds():.1f}"


def _to_json(args: argparse.Namespace, done: _Drill) -> dict[str, Any]:
    ready = done.ready
    report: dict[str, Any] = {
        "target": args.to,
        "targetRegion": ready.region,
        "stack": args.stack,
        "regions": args.regions,
        "checks": [check.to_json() for check in ready.checks],
        "ready": ready.ok,
    }
    if args.yes:
        report["switchedAt"] = utc_iso(done.switched_at) if done.switched_at else None
        report["switch"] = done.switched.to_json(args) if done.switched else None
        report["firstFiring"] = done.first.to_json() if done.first else None
        report["switchBack"] = done.back.to_json(args) if done.back else None
        report["passed"] = done.passed
        if done.notes:
            report["problems"] = done.notes
    return report
