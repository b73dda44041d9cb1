"""A drill's readiness checks: is the region that is to take over ready, and are the regions in
step, before anything is switched?

Each check is ok or failed, with one line saying why. The stack (doctor's: described, its
outputs, its state table) and the target's jobs (doctor's: each target exists, the ticker's role
may invoke it) are doctor's checks, asked again; the active environment is what ``status``
reads, and whether a failover would be refused is what ``failover`` asks. The rest are the
drill's own: the cron file each ticker reads, the same bytes everywhere (SHA-256, which the
loader keeps as the file's version); the runtime schedules and the pauses, the same in every
region (each region's state table holds its own, and a failover carries none across); the
stack's alarms in the target region, there and quiet.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.cli.context import Context
from mini_scheduler.cli.doctor.findings import Finding, Region, Stop
from mini_scheduler.cli.doctor.stack import check_table, describe_stack
from mini_scheduler.cli.doctor.targets import check_jobs
from mini_scheduler.cli.environment import (
    StackRegion,
    known_names,
    read_active,
    refused_target,
    resolve_each,
)
from mini_scheduler.cli.render import plural
from mini_scheduler.cli.where import Where, claims_for, cron_source, each_region
from mini_scheduler.environment.active import same_environment
from mini_scheduler.errors import describe_aws_error
from mini_scheduler.fleet import Outcome, judge
from mini_scheduler.jobs import CronFile

if TYPE_CHECKING:
    from mini_scheduler.claims.base import ClaimStore

OUTPUTS: Final = ("StateTableName", "TickerFunctionName", "ActiveEnvironmentParameter")
"""The outputs a drill needs of each stack: where its ticker claims, and the store it reads."""
SHORT_HASH: Final = 12  # hex digits of a SHA-256 shown in a line (the JSON has them all)


@dataclass(frozen=True, slots=True)
class Check:
    """One readiness check: ok or failed, with one line saying why (``facts``: for JSON)."""

    name: str
    ok: bool
    detail: str
    facts: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "detail": self.detail, **self.facts}


@dataclass(frozen=True, slots=True)
class Readiness:
    """The checks, and what the drill goes on with: the environment to switch back to, the
    target's region and where its ticker claims, and the names whose firings are watched there
    (its cron file's jobs and its runtime schedules)."""

    checks: list[Check]
    before: str | None = None
    region: str | None = None
    where: Where | None = None
    names: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]


class _Regions:
    """Each region's configuration as the failover resolves it, and the regions it could not
    (their stack did not answer): a read in every region reports those as failed."""

    def __init__(
        self, regions: list[str], wheres: dict[str, StackRegion], unresolved: list[Outcome]
    ) -> None:
        self.regions = regions
        self.wheres = wheres
        self.unresolved = {o.region: o.error or "its stack did not answer" for o in unresolved}
        self.described: dict[str, dict[str, Any]] = {}  # each stack, as doctor describes it

    def where(self, region: str) -> Where:
        return self.wheres[region].where

    def read(self, act: Callable[[Where], Any]) -> tuple[dict[str, Any], list[str]]:
        """``act`` in every resolved region: each answer by region, and each failure as
        ``region: why`` (a region not resolved too), in the order the regions were given."""
        done = each_region(list(self.wheres), lambda r: {"answer": act(self.where(r))})
        answers = {o.region: o.fields["answer"] for o in done if o.ok}
        failed = {o.region: str(o.error) for o in done if not o.ok} | self.unresolved
        return answers, self.lines(failed)

    def lines(self, failed: Mapping[str, str]) -> list[str]:
        """``region: why`` of each region in ``failed``, in the order the regions were given."""
        return [f"{region}: {failed[region]}" for region in self.regions if region in failed]


def readiness(args: argparse.Namespace, context: Context, target: str) -> Readiness:
    """Every check, in order; the target region's only when one region's stack is ``target``."""
    regions: list[str] = args.regions
    seen = _Regions(regions, *resolve_each(args, context, regions))
    checks = [_stack(context, args.stack, seen)]
    active, before, region = _active(args, context, seen, target)
    checks.append(active)
    cron, files = _cron_files(context, seen)
    checks.append(cron)
    stores, failures = seen.read(lambda where: claims_for(context, where))
    checks.append(_schedules(stores, failures))
    checks.append(_pauses(stores, failures))
    if region is None or region not in seen.wheres:
        why = f"not checked: no region given is {target}'s"
        checks += [Check("targets", False, why), Check("alarms", False, why)]
        return Readiness(checks, before)
    where = seen.where(region)
    checks.append(_targets(context, seen, where))
    checks.append(_alarms(context, args.stack, region))
    names = tuple(job.name for job in files[region].jobs) if region in files else ()
    if region in stores:
        names += tuple(d.name for d in stores[region].schedules() if d.name not in names)
    return Readiness(checks, before, region, where, names)


def _stack(context: Context, stack: str, seen: _Regions) -> Check:
    """Doctor's: the stack described and complete in every region, with the outputs a drill
    needs, and its state table ACTIVE."""

    def answers(where: Where) -> str:
        region = where.region
        try:
            described = seen.described[region] = describe_stack(context, stack, region)
            finding: Finding = described["finding"]
            if finding.level != "ok":
                return finding.message
            missing = [name for name in OUTPUTS if name not in described["outputs"]]
            if missing:
                return f"{stack} has no output {', '.join(missing)} (deploy it again)"
            table = check_table(context, Region(region), where)
        except Stop as stop:
            return stop.finding.message
        return "" if table.level == "ok" else table.message

    answers_by_region, failures = seen.read(answers)
    failures += seen.lines({r: why for r, why in answers_by_region.items() if why})
    if failures:
        return Check("stack", False, "; ".join(failures))
    shown = ", ".join(seen.wheres)
    return Check("stack", True, f"{stack} in {shown}: complete, outputs present, tables ACTIVE")


def _active(
    args: argparse.Namespace, context: Context, seen: _Regions, target: str
) -> tuple[Check, str | None, str | None]:
    """Who is active now, as ``status`` reads it: one environment in every region, not the
    target, whose stack is in exactly one region given, and a failover that would not be
    refused. Also the environment to switch back to, and the target's region."""
    wheres = seen.wheres
    known = known_names(args, context, list(wheres.values()))
    answers, failures = seen.read(lambda where: read_active(context, where, known))
    if failures:
        return Check("active", False, "; ".join(failures)), None, None
    outcomes = [Outcome(region, True, fields) for region, fields in answers.items()]
    environments = {r: s.where.environment_name for r, s in wheres.items()}
    problem = judge(outcomes, environments, known).problem
    if problem:
        return Check("active", False, problem), None, None
    before = str(outcomes[0].fields["active"])
    theirs = [r for r, name in environments.items() if name and same_environment(name, target)]
    region = theirs[0] if len(theirs) == 1 else None
    refused = refused_target(args, target, known, list(wheres), wheres)
    if refused:
        return Check("active", False, refused), before, region
    if region is None:
        whose = "no region given is" if not theirs else f"{', '.join(theirs)} are all"
        return Check("active", False, f"{whose} {target}'s (EnvironmentName)"), before, None
    if same_environment(before, target):
        detail = f"{target} is active already: a drill switches to a region on standby"
        return Check("active", False, detail), before, region
    return (
        Check("active", True, f"{before} active everywhere; {target} is {region}'s"),
        before,
        region,
    )


def _cron_files(context: Context, seen: _Regions) -> tuple[Check, dict[str, CronFile]]:
    """The cron file each region's ticker reads, the same bytes in every region."""
    files, failures = seen.read(lambda where: cron_source(context, where).load())
    if failures:
        return Check("cron file", False, "; ".join(failures)), files
    hashes = {region: cron.version for region, cron in files.items()}
    facts = {"sha256": hashes}
    if len(set(hashes.values())) > 1:
        by_hash: dict[str, list[str]] = {}
        for region, digest in hashes.items():
            by_hash.setdefault(digest, []).append(region)
        shown = "; ".join(f"{', '.join(r)} sha256 {h[:SHORT_HASH]}" for h, r in by_hash.items())
        return Check("cron file", False, f"differs: {shown}", facts), files
    digest = next(iter(hashes.values()))
    return Check(
        "cron file", True, f"the same in every region: sha256 {digest[:SHORT_HASH]}", facts
    ), files


def _schedules(stores: Mapping[str, ClaimStore], failures: list[str]) -> Check:
    """The runtime schedules: the same names, each with the same generation, in every region."""

    def definitions(region: str, store: ClaimStore) -> dict[str, str]:
        return {d.name: f"generation {d.generation}" for d in store.schedules()}

    return _in_step("schedules", "runtime schedule", stores, failures, definitions)


def _pauses(stores: Mapping[str, ClaimStore], failures: list[str]) -> Check:
    """The paused jobs: the same in every region (a pause is in one region's table)."""

    def paused(region: str, store: ClaimStore) -> dict[str, str]:
        return dict.fromkeys(store.control(f"{region}/-").paused, "paused")

    return _in_step("pauses", "paused job", stores, failures, paused)


def _in_step(
    name: str,
    what: str,
    stores: Mapping[str, ClaimStore],
    failures: list[str],
    read: Callable[[str, ClaimStore], dict[str, str]],
) -> Check:
    """Each region's names (and a value for each, e.g. a generation) read with ``read``: the
    same everywhere, or each difference."""
    done = each_region(list(stores), lambda r: {"held": read(r, stores[r])})
    failures = [*failures, *(f"{o.region}: {o.error}" for o in done if not o.ok)]
    if failures:
        return Check(name, False, "; ".join(failures))
    held: dict[str, dict[str, str]] = {o.region: o.fields["held"] for o in done}
    differences = []
    for item in sorted({item for values in held.values() for item in values}):
        where = {region: values[item] for region, values in held.items() if item in values}
        if len(where) < len(held):
            differences.append(f"{item} only in {', '.join(where)}")
        elif len(set(where.values())) > 1:
            shown = ", ".join(f"{value} in {region}" for region, value in where.items())
            differences.append(f"{item}: {shown}")
    if differences:
        return Check(name, False, "; ".join(differences))
    count = max((len(values) for values in held.values()), default=0)
    if not count:
        return Check(name, True, f"no {what} in any region")
    return Check(name, True, f"{plural(count, what)}, the same in every region")


def _targets(context: Context, seen: _Regions, where: Where) -> Check:
    """Doctor's: each job's target in the target region exists and the ticker's role may
    invoke it (a warning, e.g. no destinations, does not stop a firing)."""
    region = where.region
    described = seen.described.get(region)
    if described is None:
        return Check("targets", False, f"not checked: the stack in {region} did not answer")
    stack = Region(region, where, described["parameters"], described["outputs"])
    findings = check_jobs(context, stack, where)
    errors = [f for f in findings if f.level == "error"]
    if errors:
        more = f" (and {plural(len(errors) - 1, 'more')})" if len(errors) > 1 else ""
        return Check("targets", False, f"{errors[0].check}: {errors[0].message}{more}")
    jobs = sum(1 for f in findings if f.check.startswith("job "))
    warnings = sum(1 for f in findings if f.level == "warning")
    noted = f" ({plural(warnings, 'warning')}: mini-scheduler doctor says more)" if warnings else ""
    return Check(
        "targets",
        True,
        f"{plural(jobs, 'job')} in {region}: each target exists, the ticker may invoke it{noted}",
    )


def _alarms(context: Context, stack: str, region: str) -> Check:
    """The stack's alarms (named ``<stack>-...``) in the target region: there, none in ALARM."""
    from botocore.exceptions import BotoCoreError, ClientError

    prefix = f"{stack}-"
    try:
        pages = context.clients(region)("cloudwatch").get_paginator("describe_alarms")
        alarms = [
            alarm
            for page in pages.paginate(AlarmNamePrefix=prefix)
            for kind in ("MetricAlarms", "CompositeAlarms")
            for alarm in page.get(kind) or []
        ]
    except (BotoCoreError, ClientError) as exc:
        detail = f"CloudWatch DescribeAlarms in {region} failed - {describe_aws_error(exc)}"
        return Check("alarms", False, detail)
    if not alarms:
        return Check("alarms", False, f"no alarm named {prefix}* in {region}: deploy the stack")
    ringing = sorted(str(a["AlarmName"]) for a in alarms if a.get("StateValue") == "ALARM")
    if ringing:
        return Check("alarms", False, f"in ALARM in {region}: {', '.join(ringing)}")
    return Check(
        "alarms", True, f"{plural(len(alarms), 'alarm')} {prefix}* in {region}, none in ALARM"
    )
