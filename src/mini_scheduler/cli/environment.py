"""``status`` and ``failover``: the active environment as each region's store holds it, and
written in every region, one by one and read back; the names the deployment knows (each
region's stack, its KnownEnvironments output, ``--known``), which the console reads too."""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import dataclass
from typing import Any

from mini_scheduler import fleet
from mini_scheduler.cli.audit import identity_of, no_trail, reason_of, trail_for
from mini_scheduler.cli.context import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    Context,
    audit_said,
)
from mini_scheduler.cli.render import columns, plural
from mini_scheduler.cli.suggest import closest
from mini_scheduler.cli.where import (
    Where,
    add_operator,
    add_where,
    each_region,
    environment_for,
    many_regions,
    operator_name,
    resolve,
    stack_outputs,
)
from mini_scheduler.config import DEFAULT_KNOWN, environment_names, valid_environment_name
from mini_scheduler.environment.active import DEFAULT_ACTIVE, ActiveEnvironment, same_environment
from mini_scheduler.environment.regions import is_known
from mini_scheduler.errors import ConfigurationError, SchedulerError
from mini_scheduler.fleet import Outcome
from mini_scheduler.operator import Operator

# The names a deployment knows: each region's environment (its stack's EnvironmentName output,
# or for one region --environment-name / ENVIRONMENT_NAME), each stack's KnownEnvironments output
# (the list its ticker knows), and --known or KNOWN_ENVIRONMENTS; with no stack's name and no
# list, the functions' default, prod,DR.
# failover accepts only a known name unless forced; status and failover say when no region, or
# more than one, is active.


def add_known(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--known",
        metavar="ENV1,ENV2",
        help="the environment names the deployment's stacks have, besides each stack's "
        "EnvironmentName output (KNOWN_ENVIRONMENTS; default prod,DR when no --stack names one)",
    )


@dataclass(frozen=True, slots=True)
class StackRegion:
    """One region's configuration, and its stack's KnownEnvironments output (None: no stack,
    or a stack without it)."""

    where: Where
    listed: str | None = None


def known_names(
    args: argparse.Namespace, context: Context, wheres: list[StackRegion]
) -> tuple[str, ...]:
    """The names the deployment knows, as the regions in ``wheres`` tell them."""
    given: str | None = getattr(args, "known", None)
    what = "--known" if given is not None else "KNOWN_ENVIRONMENTS"
    text = given if given is not None else context.environ.get("KNOWN_ENVIRONMENTS", "")
    try:
        listed = environment_names(text, what)
    except ConfigurationError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from exc
    names = [r.where.environment_name for r in wheres if r.where.environment_name]
    for region in wheres:
        if region.listed:
            where = region.where
            output = f"stack {where.stack}'s KnownEnvironments output in {where.region}"
            try:
                listed += environment_names(region.listed, output)
            except ConfigurationError as exc:
                raise CommandError(str(exc)) from exc
    if not listed and not any(r.where.stack and r.where.environment_name for r in wheres):
        listed = DEFAULT_KNOWN
    return fleet.known_names(names, listed)


def add_status(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "status",
        help="the active environment, as each region's store holds it",
        description=(
            "Read each region's active-environment store (an SSM parameter by default) one "
            "by one and report it, and whether exactly one region is active. Exit 1 when a "
            "region could not be read, when no region is active (the name is not a known "
            "environment, or each region holds another's), when more than one is, or when "
            "the regions hold different values."
        ),
    )
    add_known(parser)
    add_where(parser, many_regions=True, table=True, parameter=True, environment_name=True)


def read_active(context: Context, where: Where, known: tuple[str, ...]) -> dict[str, Any]:
    """What ``where``'s store holds (``active``, prod when it holds nothing), whether the name
    is known, and this region's mode when its own name is known (status, and a drill's check)."""
    store = environment_for(context, where)
    stored = store.get()
    active = "prod" if stored is None else stored.strip()
    if not valid_environment_name(active):
        raise CommandError(
            f"{store.name} holds {stored!r}, which is not an environment name: the tickers "
            "fail closed until it is fixed (mini-scheduler failover --to NAME)"
        )
    fields: dict[str, Any] = {
        "store": store.name,
        "active": active,
        "stored": stored is not None,
        "known": is_known(active, known),
    }
    if where.environment_name:
        fields["environment"] = where.environment_name
        fields["mode"] = "active" if same_environment(active, where.environment_name) else "standby"
    return fields


def resolve_each(
    args: argparse.Namespace, context: Context, regions: list[str]
) -> tuple[dict[str, StackRegion], list[Outcome]]:
    """Each region's configuration; the regions whose stack could not be read, as failures."""

    def one(region: str) -> dict[str, Any]:
        where = resolve(args, context, region, one_of=len(regions))
        outputs = stack_outputs(context, where.stack, region) if where.stack else {}
        return {"region": StackRegion(where, outputs.get("KnownEnvironments"))}

    resolved = each_region(regions, one)
    wheres = {o.region: o.fields["region"] for o in resolved if o.ok}
    return wheres, [o for o in resolved if not o.ok]


def status(args: argparse.Namespace, context: Context) -> int:
    regions = many_regions(args, context)
    if args.environment_name and len(regions) > 1:
        return context.fail("status", "--environment-name names one region's: give one region")
    wheres, unresolved = resolve_each(args, context, regions)
    known = known_names(args, context, list(wheres.values()))
    read = {o.region: o for o in unresolved}
    for o in each_region(list(wheres), lambda r: read_active(context, wheres[r].where, known)):
        read[o.region] = o
    outcomes = [read[r] for r in regions]
    failed = [o for o in outcomes if not o.ok]
    judged = fleet.judge(outcomes, _environments(wheres), known)
    problem = judged.problem
    code = EXIT_FAILED if failed or problem else EXIT_OK
    if args.json:
        report: dict[str, Any] = {
            "regions": [o.to_json() for o in outcomes],
            "agree": judged.agree,
            "known": list(known),
            "activeRegions": judged.active_regions,
        }
        if problem:
            report["problem"] = problem
        context.print(json.dumps(report, indent=2))
        return code
    rows = [["REGION", "ACTIVE", "THIS REGION", "STORE"]]
    for o in outcomes:
        if not o.ok:
            rows.append([o.region, "FAILED", "-", o.error or ""])
            continue
        active = str(o.fields["active"]) + ("" if o.fields["stored"] else " (default)")
        active += "" if o.fields["known"] else " (not known)"
        here = (
            f"{o.fields['environment']}: {o.fields['mode']}" if "environment" in o.fields else "-"
        )
        rows.append([o.region, active, here, str(o.fields["store"])])
    for line in columns(rows):
        context.print(line)
    if problem:
        context.print(problem + ".")
    if failed:
        context.print(f"{len(failed)} of {plural(len(outcomes), 'region')} could not be read.")
    return code


def _environment_name(text: str) -> str:
    name = text.strip()
    if not valid_environment_name(name):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an environment name (one word of letters, digits, '-' and '_')"
        )
    return name


def add_failover(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "failover",
        help="make an environment active: write every region's store, one by one",
        description=(
            "Write the active environment into each region's store (the same store classes "
            "the ticker reads), in the order given, and report each. The name must be a known "
            "environment (a stack's EnvironmentName output, or --known) unless forced. Until "
            "every region is written the regions disagree: exit 1 when any failed, and run it "
            "again for those; exit 1 too when, written, no region or more than one is active. "
            "With --drill (and --stack): check that ENV's region is ready, and with --yes "
            "switch, time the first firing there and switch back (docs/fail-over.md, Drill)."
        ),
    )
    parser.add_argument(
        "--to", required=True, type=_environment_name, metavar="ENV", help="e.g. DR or prod"
    )
    add_operator(parser)
    add_known(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="write a name that is not a known environment (no region may be active then)",
    )
    parser.add_argument(
        "--reason",
        metavar="TEXT",
        help="why (kept in the audit trail; required with --force: why that name)",
    )
    drill = parser.add_argument_group("a drill (docs/fail-over.md, Drill)")
    drill.add_argument(
        "--drill",
        action="store_true",
        help="check that ENV's region is ready (with --stack); with --yes, switch, time the "
        "first firing there, and switch back",
    )
    drill.add_argument("--yes", action="store_true", help="switch (a drill only checks without)")
    drill.add_argument("--stay", action="store_true", help="stay on ENV after the drill")
    drill.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long the drill waits for the first firing (default 180)",
    )
    add_where(parser, many_regions=True, table=True, parameter=True)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 1 to 3600")
    return seconds


def _retry_hint(args: argparse.Namespace, target: str) -> str:
    """The command that writes the regions left: it names every region given, since a
    failover refuses a region left out (writing a region again is harmless), and it knows the
    same names this one did."""
    hint = f"mini-scheduler failover --to {target} --regions {','.join(args.regions)}"
    if args.force:
        return hint + f" --force --reason {shlex.quote(args.reason)}"
    return hint


def _unknown_name(name: str, known: tuple[str, ...]) -> str:
    """The refusal of a name no stack has, with the closest known one."""
    folded = {k.casefold(): k for k in known}  # names compare without regard to case
    close = closest(name.casefold(), folded)
    then = f" - did you mean {folded[close]}? No" if close else ": no"
    return (
        f"{name} is not a known environment (known: {', '.join(known)}){then} region would be "
        "active, and nothing was written. Check the name (a stack's EnvironmentName, --known, "
        "KNOWN_ENVIRONMENTS), or write it anyway with --force --reason TEXT"
    )


def _environments(wheres: dict[str, StackRegion]) -> dict[str, str | None]:
    """Each region's own environment name (None: not known)."""
    return {region: r.where.environment_name for region, r in wheres.items()}


def _left_out(gap: fleet.Gap) -> str:
    """The refusal of a failover that leaves a stack's region out (:func:`fleet.left_out`)."""
    target, regions, known = gap.target, gap.regions, gap.known
    if gap.missing:
        whose = " or ".join(gap.missing)
        return (
            f"{target} would be active in {', '.join(gap.active)}, and no region given is "
            f"{whose}'s (known: {', '.join(known)}): a region left out keeps its value, and may "
            f"stay active too. Give every stack's region: --regions {','.join(regions)},"
            + ",".join(f"<{m}'s region>" for m in gap.missing)
            + f" (if no stack is named {whose}, take it out of KnownEnvironments or --known)."
        )
    return (
        f"the deployment knows {plural(len(known), 'environment')} ({', '.join(known)}) and "
        f"{plural(len(regions), 'region')} {'is' if len(regions) == 1 else 'are'} given "
        f"({', '.join(regions)}): a region left out keeps its value, and may stay active too. "
        "Give every stack's region with --regions, and --stack NAME to tell which is which "
        "(or --known with only the names your stacks have)."
    )


@dataclass(frozen=True, slots=True)
class _Write:
    """A failover's write in one region, through the store class the ticker reads."""

    target: str
    operator: str
    force: bool
    reason: str | None
    known: tuple[str, ...]
    identity: str | None = None  # the caller's, for the audit record

    def to(self, context: Context, where: Where) -> dict[str, Any]:
        """Write, and read back (:func:`fleet.check_written`): what the region held before,
        and holds now."""
        store = environment_for(context, where)
        try:
            before: str | None = store.get()
        except SchedulerError:
            before = None
        name = where.environment_name or DEFAULT_ACTIVE
        environment = ActiveEnvironment(store, name, self.known)
        trail = trail_for(context, where)
        if trail is None:
            no_trail(context, "failover", where)
        operator_path = Operator(
            cron=None, claims=None, environment=environment, clock=context.clock, audit=trail
        ).asked(self.reason, self.identity)
        forced_why = self.reason if self.force else None
        done = operator_path.set_environment(self.target, self.operator, self.force, forced_why)
        audit_said(context, "failover", done)
        after = fleet.check_written(store.name, store.get(), self.target)
        fields = {"store": store.name, "before": before, "active": after}
        if where.environment_name:
            fields["environment"] = where.environment_name
        return fields


@dataclass(frozen=True, slots=True)
class Switched:
    """A failover done: the name written, by whom, each region's outcome (written and read back,
    or why not), the names known, and what is wrong with who is active now (None: nothing)."""

    target: str
    operator: str
    outcomes: list[Outcome]
    known: tuple[str, ...]
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None and all(o.ok for o in self.outcomes)

    def to_json(self, args: argparse.Namespace) -> dict[str, Any]:
        report: dict[str, Any] = {
            "active": self.target,
            "operator": self.operator,
            "regions": [o.to_json() for o in self.outcomes],
            "known": list(self.known),
        }
        if args.force:
            report |= {"forced": True, "reason": args.reason}
        if self.problem:
            report["problem"] = self.problem
        return report


def switch(args: argparse.Namespace, context: Context) -> Switched:
    """Write ``args.to`` in every region of ``args.regions``, in turn, and read each back: the
    failover, and a drill's switch and switch back. CommandError (exit 2) when it is refused
    before anything is written."""
    refused = _refused_flags(args)
    if refused:
        raise CommandError(refused, EXIT_USAGE)
    regions: list[str] = args.regions
    wheres, unresolved = resolve_each(args, context, regions)
    known = known_names(args, context, list(wheres.values()))
    stacks = tuple(r.where.environment_name for r in wheres.values() if r.where.environment_name)
    target = fleet.spelled(args.to, stacks)
    refused = refused_target(args, target, known, regions, wheres)
    if refused:
        raise CommandError(refused, EXIT_USAGE)
    operator = operator_name(args, context, regions[0])
    identity = identity_of(args, context, regions[0])
    write = _Write(target, operator, args.force, reason_of(args), known, identity)
    done = {o.region: o for o in unresolved}
    for o in each_region(list(wheres), lambda region: write.to(context, wheres[region].where)):
        done[o.region] = o
    outcomes = [done[r] for r in regions]
    problem = fleet.judge(outcomes, _environments(wheres), known).problem
    return Switched(target, operator, outcomes, known, problem)


def failover(args: argparse.Namespace, context: Context) -> int:
    switched = switch(args, context)
    code = EXIT_OK if switched.ok else EXIT_FAILED
    if args.json:
        context.print(json.dumps(switched.to_json(args), indent=2))
    else:
        print_failover(context, args, switched)
    return code


def _refused_flags(args: argparse.Namespace) -> str | None:
    """Why the flags given cannot make a failover (every region named, --force with a reason)."""
    if getattr(args, "regions", None) is None:
        return "name every region with --regions R1,R2: a failover must reach them all"
    if args.force and args.reason is None:
        return "--force needs --reason TEXT (why the name is not a known one)"
    if not args.drill and (args.yes or args.stay or args.timeout is not None):
        return "--yes, --stay and --timeout go with --drill"
    return None


def refused_target(
    args: argparse.Namespace,
    target: str,
    known: tuple[str, ...],
    regions: list[str],
    wheres: dict[str, StackRegion],
) -> str | None:
    """Why writing ``target`` in ``regions`` is refused before anything is written: a name no
    stack has (unless forced), or a stack's region left out (:func:`fleet.left_out`). A
    drill's check asks it too."""
    if not is_known(target, known) and not args.force:
        return _unknown_name(target, known)
    gap = fleet.left_out(regions, _environments(wheres), known, target)
    return _left_out(gap) + " Nothing was written." if gap else None


def print_failover(context: Context, args: argparse.Namespace, switched: Switched) -> None:
    """Each region's write, and the verdict: what a failover prints, and a drill's switches."""
    target, outcomes = switched.target, switched.outcomes
    failed = [o for o in outcomes if not o.ok]
    rows = []
    for o in outcomes:
        if o.ok:
            before = o.fields["before"] if o.fields["before"] is not None else "prod (default)"
            rows.append([o.region, f"{before} -> {target}", str(o.fields["store"])])
        else:
            rows.append([o.region, "FAILED", o.error or ""])
    for line in columns(rows):
        context.print(line)
    if failed:
        context.print(
            f"Active environment {target} in {len(outcomes) - len(failed)} of "
            f"{plural(len(outcomes), 'region')}; the regions disagree until the rest are "
            f"written: {_retry_hint(args, target)}"
        )
    else:
        forced = f", forced: {args.reason}" if args.force else ""
        context.print(
            f"Active environment {target} in {plural(len(outcomes), 'region')}, set by "
            f"{switched.operator}{forced}."
        )
    if switched.problem:
        context.print(switched.problem + ".")
