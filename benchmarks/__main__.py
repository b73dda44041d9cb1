"""``python -m benchmarks``: run every benchmark and print one table, each figure beside a
baseline measured in the same run, then issue 28's targets, then the cost model the table's
cost rows come from.

Sections: 1 expansion (CPU time), 2 tick throughput against DynamoDB Local and a stub Lambda
(best-of-N wall time, and CPU time per firing, of ``overlap: allow`` and ``overlap: skip`` jobs),
each beside the floor measured in the same run (a bare boto3 ``Invoke`` loop on the same stub
and thread count) and "defaults that hold" (the template's memory, FANOUT_THRESHOLD and shards
within 10 s of CPU an invocation), 3 cold start (CPU time of the import, best of N), 4 AWS
requests and request units per firing (every item a steady tick and its closes wrote and read,
booked from its size read back), 5 monthly cost per region and per million firings beside
EventBridge Scheduler, and the bytes logged per firing, 6 deferred firings at scale (a tick's
requests with 100,000 one-time schedules pending, the batched writes of creating 1,000), 7 the
console's refresh (its AWS requests for 50 jobs in two regions, on moto), 8 a
million firings a minute on paper (shards, partitions against DynamoDB's limits, cost), 9 the
target kinds of issue 29 (a tick of 1,000 firings of an SQS queue, an SNS topic, an EventBridge
bus on a stub of the three: requests and CPU per firing, beside the bare call per firing). Then
"issue 28": one row per target of issue 28, each its section's row. Every target is a ratio or
a count taken in one run, never a timed assert. Progress goes to stderr. The exit status is 1
when a correctness check fails (expansion mismatches; a firing not dispatched exactly once
raises); a missed performance target is printed, not failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from benchmarks import (
    accounting,
    budget,
    coldstart,
    console,
    cost,
    defaults,
    deferred,
    expansion,
    per_firing,
    scale,
    target_kinds,
    targets,
    throughput,
)
from benchmarks.rig import rig
from benchmarks.table import Row, render

ROOT = Path(__file__).resolve().parents[1]
COLD = ("import with .pyc", "import without .pyc")  # the cold start's two judged rows


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs to expand (10000)")
    parser.add_argument("--minutes", type=int, default=15, help="tick windows to expand (15)")
    parser.add_argument("--seed", type=int, default=20260601, help="seed of the job mix")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="stub Invoke latency")
    parser.add_argument("--repeats", type=int, default=2, help="ticks per figure (best of)")
    parser.add_argument("--import-repeats", type=int, default=7, help="imports (best of)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes (a smoke run: the figures mean nothing, the code paths all run)",
    )
    return parser.parse_args(argv)


def _plan(args: argparse.Namespace, deployed: defaults.Defaults) -> throughput.Plan:
    plan = throughput.Plan(
        repeats=args.repeats,
        memory_mb=deployed.memory_mb,
        threshold=deployed.fanout_threshold,
        shards=deployed.fanout_shards,
    )
    if not args.quick:
        return plan
    return dataclasses.replace(
        plan,
        sizes=(8, 24),
        sweep=(4,),
        repeats=1,
        fanouts=(
            throughput.FanOut(48, 40, 8, 64, "default"),
            throughput.FanOut(24, 10, 4, 4, "recommended"),
        ),
        empty_repeats=2,
        warmup=0,
    )


def _sizes(args: argparse.Namespace) -> tuple[int, int, int, int, int, int]:
    """Jobs and minutes expanded, imports timed, firings of the accounting tick, deferred
    firings pending and runtime schedules created."""
    if args.quick:
        return min(args.jobs, 200), min(args.minutes, 2), 1, 8, 2_000, 100
    return args.jobs, args.minutes, args.import_repeats, 100, 100_000, 1_000


def _targets(
    results: throughput.Results,
    booked: accounting.Accounting,
    cold: coldstart.ColdStart,
    inputs: cost.Inputs,
    scaled: list[Row],
    refresh: Row,
) -> list[Row]:
    """Issue 28's targets, each its section's row (a module adds its own here)."""
    allow, skip, n = "overlap: allow", "overlap: skip", f"{results.largest:,}"
    found: list[tuple[str, str, Row | None]] = [
        ("1", f"ticker CPU per firing, {allow}", throughput.cpu_row(results)),
        ("1", f"wall of {n} firings, {allow}", throughput.wall_row(results)),
        ("1", f"requests per firing, {allow}", per_firing.requests_row(results)),
        ("2", f"ticker CPU per firing, {skip}", throughput.cpu_row(results, skip=True)),
        ("2", f"wall of {n} firings, {skip}", throughput.wall_row(results, skip=True)),
        ("2", f"requests per firing, {skip}", per_firing.requests_row(results, skip=True)),
        ("3", f"write units per firing, {allow}, full history", per_firing.units_row(booked)),
        ("3", f"write units per firing, {skip}, full history", per_firing.units_row(booked, True)),
        ("4", "$ per million firings, all in, on-demand", cost.per_million_row(inputs)),
        ("4", "log bytes per firing", cost.log_row(inputs)),
    ]
    judged = [row for row in coldstart.rows(cold) if row.met is not None]
    found += [("6", f"cold start, {kind}", row) for kind, row in zip(COLD, judged, strict=False)]
    found.append(("7", "console refresh, 50 jobs in 2 regions", refresh))
    rows = [targets.target(number, label, row) for number, label, row in found]
    return targets.table([*rows, targets.scale_row(scaled)])


def _report(
    args: argparse.Namespace,
    elapsed: float,
    table: list[Row],
    cold: coldstart.ColdStart,
    expanded: expansion.ExpansionResult,
) -> None:
    print(
        f"mini-scheduler benchmarks ({'quick smoke run' if args.quick else 'full size'}; "
        f"{elapsed:.0f} s). Times: expansion and imports CPU time; ticks best-of-N wall time "
        f"from the tick's start to its last dispatch, Invoke answered after "
        f"{args.latency_ms:.0f} ms by a stub, DynamoDB Local on this machine."
    )
    print(render(table))
    print(f"note: {coldstart.note(cold)}")
    for line in expansion.mismatch_lines(expanded):
        print(line)
    print()


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    started = time.perf_counter()
    deployed = defaults.read(ROOT / "template.yaml")
    plan = _plan(args, deployed)
    jobs, minutes, imports, book, pending, created = _sizes(args)

    def progress(message: str) -> None:
        print(f"[bench {time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr)

    progress(f"expansion: {jobs} jobs x {minutes} minutes, ours and croniter")
    expanded = expansion.measure(jobs, minutes, args.seed)
    latency = args.latency_ms / 1000
    progress("starting DynamoDB Local and the stub Lambda")
    with rig(latency) as bench_rig:
        results = throughput.run(bench_rig, plan, latency, progress)
        progress(f"accounting: every item a steady {book}-firing tick writes and reads, and logs")
        booked = accounting.run(bench_rig, firings=book, workers=plan.workers)
        waiting = deferred.run(
            bench_rig, pending=pending, created=created, workers=plan.workers, progress=progress
        )
        kinds = target_kinds.run(
            bench_rig,
            firings=30 if args.quick else 1000,
            workers=plan.workers,
            latency=latency,
            progress=progress,
        )
    progress(f"cold start: imports in fresh interpreters, best of {imports}")
    cold = coldstart.measure(imports)
    inputs = cost.inputs(
        results,
        booked,
        deployed.memory_mb,
        deployed.recorder_memory_mb,
        recorder_platform_lines=deployed.recorder_platform_lines,
        architecture=deployed.architecture,
        recorder_batch=deployed.recorder_batch,
    )
    capacity = budget.capacity(results)
    scaled = scale.rows(scale.measure(booked, capacity, inputs, deployed.fanout_shards_max))
    progress("console: the requests of one refresh of the jobs list, on moto")
    refresh = console.row()

    table: list[Row] = [
        *expansion.rows(expanded),
        *throughput.rows(results),
        *budget.defaults_rows(results),
        *coldstart.rows(cold),
        *per_firing.request_rows(results, booked),
        *per_firing.write_rows(booked),
        *cost.rows(inputs),
        *deferred.rows(waiting),
        refresh,
        *scaled,
        *target_kinds.rows(kinds),
        *_targets(results, booked, cold, inputs, scaled, refresh),
    ]
    _report(args, time.perf_counter() - started, table, cold, expanded)
    for line in cost.model_lines(inputs, booked):
        print(line)
    return 1 if expanded.mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
