"""``python -m benchmarks``: run every benchmark and print one table, each figure beside a
baseline measured in the same run, then the cost model the table's cost rows come from.

Sections: 1 expansion (CPU time), 2 tick throughput against DynamoDB Local and a stub Lambda
(best-of-N wall time, and CPU time per firing), each beside the floor measured in the same run
(a bare boto3 ``Invoke`` loop on the same stub and thread count) and "defaults that hold" (the
template's memory, FANOUT_THRESHOLD and shards within 10 s of CPU an invocation), 3 cold start
(CPU time of the import, best of N), 4 AWS requests and write units per firing (the batched
claim store's write model), 5 monthly cost per region and per million firings beside
EventBridge Scheduler, 6 deferred firings at scale (a tick's requests with 100,000 one-time
schedules pending, the batched writes of creating 1,000). The targets are issues 13's and 14's
(and 28's for the cold start), judged as ratios in one run. Progress goes
to stderr. The exit status is 1 when a correctness check fails (expansion mismatches; a firing
not dispatched exactly once raises); a missed performance target is printed, not failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from benchmarks import accounting, coldstart, cost, defaults, deferred, expansion, throughput
from benchmarks.console import row as console_row
from benchmarks.rig import rig
from benchmarks.table import Row, ratio, render

ROOT = Path(__file__).resolve().parents[1]
REQUESTS_PER_FIRING = 1.1  # issue 13: one Invoke and a share of batched writes
WRU_ALLOW = 3  # claim, mark, close
WRU_SKIP = 5  # ... and the slot, taken and released


TICK_REQUESTS = 5
"""A tick's requests beyond its firings with nothing due: the control query, the active
environment, the sweep's watch query, the deferred firings' query (one, however many wait for
later: issue 14 allows one more than before), the watermark."""


def _per(calls: Mapping[str, float], firings: int, least: float = 0.0) -> str:
    """``Operation share`` per firing, largest first; the shares under ``least`` as "other"."""
    shares = sorted(((v / firings, k.split(".")[1]) for k, v in calls.items() if v), reverse=True)
    named = [f"{name} {share:.2f}" for share, name in shares if share >= least]
    other = sum(share for share, _ in shares if share < least)
    return ", ".join(named + ([f"other {other:.2f}"] if other else []))


def request_rows(
    results: throughput.Results, acc: accounting.Accounting, budget: float = REQUESTS_PER_FIRING
) -> list[Row]:
    """Requests counted generically: every request a tick made (botocore's ``before-call``,
    whatever the operation: PutItem or TransactWriteItems today, BatchExecuteStatement with
    the batched store), divided by its firings."""
    large = results.best(results.concurrent[results.largest])
    total = sum(large.calls.values())
    hot = total / large.firings
    marginal = results.per_firing_calls()
    per_tick = results.per_tick_calls()
    tick_total = sum(per_tick.values())
    recorder = sum(acc.recorder_calls.values())
    return [
        Row(
            "4 requests",
            f"AWS requests per firing, ticker: all {total:,} of a {large.firings:,}-firing "
            f"tick / {large.firings:,} ({_per(large.calls, large.firings, 0.05)})",
            f"{hot:.2f}",
            "the floor: 1 (its Invoke)",
            ratio(hot, 1.0, digits=2),
            f"<= {budget:g}",
            hot <= budget,
        ),
        Row(
            "4 requests",
            f"  beyond the {min(results.plan.sizes):,}-firing tick, per firing "
            f"({_per(marginal, 1)})",
            f"{sum(marginal.values()):.2f}",
            "the floor: 1",
            ratio(sum(marginal.values()), 1.0, digits=2),
        ),
        Row(
            "4 requests",
            "AWS requests per tick beyond firings ("
            + ", ".join(f"{k.split('.')[1]} {v}" for k, v in per_tick.items())
            + ")",
            f"{tick_total}",
            "before deferred firings: 4 (their query: +1, issue 14)",
            ratio(tick_total, TICK_REQUESTS - 1, digits=2),
            f"<= {TICK_REQUESTS}",
            tick_total <= TICK_REQUESTS,
        ),
        Row(
            "4 requests",
            f"recorder requests per run it closes ({_per(acc.recorder_calls, 1)})",
            f"{recorder:.2f}",
            f"ticker per firing: {hot:.2f}",
            ratio(recorder, hot, digits=2),
        ),
    ]


def write_rows(results: throughput.Results, acc: accounting.Accounting) -> list[Row]:
    """The write model (``benchmarks.accounting``) on the item sizes read back."""
    units, sizes = acc.units, acc.sizes
    n = results.largest
    watch = units.watch_writes(n)
    source = "read back" if sizes.watch_read_back else "modelled: the store wrote none"
    steps = f"claim {units.claim} + mark {units.mark} + close {units.close}"
    return [
        Row(
            "4 writes",
            f"WRU per firing, overlap: allow: {steps} (no transaction, no index)",
            f"{units.per_firing} WRU",
            f"the floor: one conditional write, {units.claim} WRU",
            ratio(units.per_firing, units.claim),
            f"<= {WRU_ALLOW} WRU",
            units.per_firing <= WRU_ALLOW,
        ),
        Row(
            "4 writes",
            f"WRU per firing, overlap: skip: {steps} + slot {units.slot} (taken, released)",
            f"{units.per_firing_skip} WRU",
            f"the floor: one conditional write, {units.claim} WRU",
            ratio(units.per_firing_skip, units.claim),
            f"<= {WRU_SKIP} WRU",
            units.per_firing_skip <= WRU_SKIP,
        ),
        Row(
            "4 writes",
            f"  per tick of {n:,}: watermark {units.tick_writes} + watch item put and delete "
            f"{watch} ({sizes.watch(n):,} B, {source})",
            f"{units.tick_writes + watch} WRU",
            f"a share per firing: {(units.tick_writes + watch) / n:.3f} WRU",
        ),
        Row(
            "4 writes",
            f"RRU per firing: the sweep's eventually consistent read of the run "
            f"{units.reads_per_firing:g} + the watch Query's share {units.watch_reads(n) / n:.3f}",
            f"{units.reads_per_firing + units.watch_reads(n) / n:.2f} RRU",
            f"per tick: control and environment {units.tick_reads:g} RRU",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
    started = time.perf_counter()
    deployed = defaults.read(ROOT / "template.yaml")
    memory = deployed.memory_mb
    if args.quick:
        plan = throughput.Plan(
            sizes=(8, 24),
            sweep=(4,),
            repeats=1,
            fanouts=(
                throughput.FanOut(48, 40, 8, 64, "default"),
                throughput.FanOut(24, 10, 4, 4, "recommended"),
            ),
            empty_repeats=2,
            warmup=0,
            memory_mb=memory,
            threshold=deployed.fanout_threshold,
            shards=deployed.fanout_shards,
        )
        jobs, minutes, imports, book = min(args.jobs, 200), min(args.minutes, 2), 1, 8
        pending, created = 2_000, 100
    else:
        plan = throughput.Plan(
            repeats=args.repeats,
            memory_mb=memory,
            threshold=deployed.fanout_threshold,
            shards=deployed.fanout_shards,
        )
        jobs, minutes, imports, book = args.jobs, args.minutes, args.import_repeats, 100
        pending, created = 100_000, 1_000

    def progress(message: str) -> None:
        print(f"[bench {time.perf_counter() - started:5.0f} s] {message}", file=sys.stderr)

    progress(f"expansion: {jobs} jobs x {minutes} minutes, ours and croniter")
    expanded = expansion.measure(jobs, minutes, args.seed)
    latency = args.latency_ms / 1000
    progress("starting DynamoDB Local and the stub Lambda")
    with rig(latency) as bench_rig:
        results = throughput.run(bench_rig, plan, latency, progress)
        progress(f"accounting: requests, item sizes, log bytes of a {book}-firing tick")
        booked = accounting.run(bench_rig, firings=book, workers=plan.workers)
        waiting = deferred.run(
            bench_rig, pending=pending, created=created, workers=plan.workers, progress=progress
        )
    progress(f"cold start: imports in fresh interpreters, best of {imports}")
    cold = coldstart.measure(imports)
    inputs = cost.inputs(
        results,
        booked,
        memory,
        deployed.recorder_memory_mb,
        recorder_platform_lines=deployed.recorder_platform_lines,
        architecture=deployed.architecture,
    )

    table: list[Row] = [
        *expansion.rows(expanded),
        *throughput.rows(results),
        *coldstart.rows(cold),
        *request_rows(results, booked),
        *write_rows(results, booked),
        *cost.rows(inputs),
        *deferred.rows(waiting),
        console_row(),
    ]
    elapsed = time.perf_counter() - started
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
    for line in cost.model_lines(inputs, booked):
        print(line)
    return 1 if expanded.mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
