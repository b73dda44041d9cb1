"""``doctor``: a deployment's preflight check, region by region, each finding with what to do.

In every region: the stack (deployed, complete), its state table, the active-environment value
and whether some region's stack has that name, the tick schedule enabled, and for each job of
the stack's cron file: its target exists, the ticker's role may invoke it (the stack's target
prefixes, its region and account), and the recorder hears its end (a Lambda target's
destinations, a flow's EventBridge rule). Read-only. Exit 1 when a finding stops jobs (an
``error``); warnings alone exit 0.

This module is the command and its report; the checks are :mod:`.stack`'s (a region's stack,
and the active environment across the regions) and :mod:`.targets`' (the cron file's jobs),
each a :class:`~.findings.Finding`.
"""

from __future__ import annotations

import argparse
import json

from mini_scheduler.cli.context import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CommandError, Context
from mini_scheduler.cli.doctor.findings import Finding, Region, Stop
from mini_scheduler.cli.doctor.stack import CHECKS, across_regions, describe_stack
from mini_scheduler.cli.doctor.targets import check_jobs
from mini_scheduler.cli.render import columns, level_tag
from mini_scheduler.cli.where import add_where, many_regions, resolve
from mini_scheduler.errors import SchedulerError


def add_doctor(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "doctor",
        help="check a deployment in every region, each finding with what to do",
        description=(
            "Check, in every region: the stack, its state table, the active environment (and "
            "that a stack has that name), the tick schedule, and each job of the stack's cron "
            "file: its target exists, the ticker may invoke it, the recorder hears its end. "
            "Read-only. Exit 1 when a finding stops jobs."
        ),
    )
    add_where(parser, many_regions=True, table=False)


def doctor(args: argparse.Namespace, context: Context) -> int:
    if not args.stack:
        raise CommandError("doctor checks a stack: give --stack NAME", EXIT_USAGE)
    regions = many_regions(args, context)
    seen = [Region(region) for region in regions]
    findings: list[Finding] = []
    for region in seen:
        findings.extend(_region_findings(args, context, region))
    findings.extend(across_regions(args.stack, seen))
    order = {r: i for i, r in enumerate(regions)}
    findings.sort(key=lambda f: order.get(f.region, len(order)))
    errors = sum(1 for f in findings if f.level == "error")
    warnings = sum(1 for f in findings if f.level == "warning")
    if args.json:
        report = {
            "stack": args.stack,
            "regions": regions,
            "ok": errors == 0,
            "findings": [f.to_json() for f in findings],
        }
        context.print(json.dumps(report, indent=2))
        return EXIT_FAILED if errors else EXIT_OK
    rows = [["REGION", "", "CHECK", "FINDING"]]
    rows += [[f.region, level_tag(f.level).strip(), f.check, f.message] for f in findings]
    for line in columns(rows):
        context.print(line)
    fixes = _what_to_do(findings)
    if fixes:
        context.print()
        context.print("What to do:")
        for line in fixes:
            context.print(f"  {line}")
    verdict = (
        ("1 finding stops" if errors == 1 else f"{errors} findings stop") + " the jobs"
        if errors
        else "Nothing stops the jobs"
    )
    if warnings:
        verdict += f"; {warnings} warning{'s' if warnings != 1 else ''}"
    context.print(f"{verdict} (stack {args.stack} in {', '.join(regions)}).")
    return EXIT_FAILED if errors else EXIT_OK


def _what_to_do(findings: list[Finding]) -> list[str]:
    """Each fix once: the regions where the same check has the same fix share one line."""
    regions: dict[tuple[str, str], list[str]] = {}
    for f in findings:
        if f.fix and f.region not in regions.setdefault((f.check, f.fix), []):
            regions[(f.check, f.fix)].append(f.region)
    return [f"{', '.join(where)} {check}: {fix}" for (check, fix), where in regions.items()]


def _region_findings(args: argparse.Namespace, context: Context, seen: Region) -> list[Finding]:
    """The checks of one region; the first that cannot go on (no stack) ends them."""
    region = seen.region
    found: list[Finding] = []
    try:
        stack = describe_stack(context, args.stack, region)
    except Stop as stop:
        return [stop.finding]
    seen.parameters, seen.outputs = stack["parameters"], stack["outputs"]
    found.append(stack["finding"])
    try:
        where = seen.where = resolve(args, context, region)
    except (CommandError, SchedulerError) as exc:
        return [*found, Finding(region, "error", "stack", str(exc))]
    for check in CHECKS:
        try:
            found.append(check(context, seen, where))
        except Stop as stop:
            found.append(stop.finding)
    found.extend(check_jobs(context, seen, where))
    return found
