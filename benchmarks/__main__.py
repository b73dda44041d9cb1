"""``python -m benchmarks``: run every benchmark and print one table, each figure beside a
baseline measured in the same run, then the cost model the table's cost rows come from.

Sections: 1 expansion (CPU time), 2 tick throughput against DynamoDB Local and a stub Lambda
(best-of-N wall time, and CPU time per firing), 3 cold start (CPU time of the import, best of
N), 4 AWS requests and write units per firing, 5 monthly cost per region. Progress goes to
stderr. The exit status is 1 when a correctness check fails (expansion mismatches; a firing not
dispatched exactly once raises); a missed performance target is printed, not failed.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from benchmarks import accounting, coldstart, cost, expansion, throughput
from benchmarks.rig import rig
from benchmarks.table import Row, ratio, render

ROOT = Path(__file__).resolve().parents[1]


def template_memory(default: int = 256) -> int:
    """The functions' MemorySize in template.yaml (Globals), or ``default``."""
    try:
        text = (ROOT / "template.yaml").read_text()
    except OSError:
        return default
    found = re.search(r"^Globals:.*?^\s+MemorySize:\s*(\d+)", text, re.S | re.M)
    return int(found.group(1)) if found else default


def request_rows(
    results: throughput.Results, acc: accounting.Accounting, budget: int = 3
) -> list[Row]:
    per_firing = results.per_firing_calls()
    hot = sum(per_firing.values())
    per_tick = results.per_tick_calls()
    tick_total = sum(per_tick.values())
    large = results.best(results.concurrent[results.largest])
    expected = budget * large.firings + tick_total
    units = acc.units
    named = ", ".join(f"{k.split('.')[1]} {v:g}" for k, v in per_firing.items() if v)
    return [
        Row(
            "4 requests",
            f"AWS requests per firing, hot path ({named})",
            f"{hot:.2f}",
            f"the documented budget: {budget}",
            ratio(hot, budget, digits=2),
            f"<= {budget}",
            hot <= budget,
        ),
        Row(
            "4 requests",
            "AWS requests per tick beyond firings ("
            + ", ".join(f"{k.split('.')[1]} {v}" for k, v in per_tick.items())
            + ")",
            f"{tick_total}",
            "tests/system/integration/test_call_budget: 4",
            ratio(tick_total, 4, digits=2),
            "<= 4",
            tick_total <= 4,
        ),
        Row(
            "4 requests",
            f"AWS requests of a tick of {large.firings:,} firings",
            f"{sum(large.calls.values()):,}",
            f"{budget} x {large.firings:,} + {tick_total}: {expected:,}",
            ratio(sum(large.calls.values()), expected, digits=2),
        ),
        Row(
            "4 requests",
            "recorder requests per run it closes ("
            + ", ".join(f"{k.split('.')[1]} {v:g}" for k, v in acc.recorder_calls.items())
            + ")",
            f"{sum(acc.recorder_calls.values()):.2f}",
            f"ticker per firing: {hot:.2f}",
            ratio(sum(acc.recorder_calls.values()), hot, digits=2),
        ),
        Row(
            "4 requests",
            f"WRU per firing: claim {units.claim} + mark {units.mark} + close {units.close} "
            "(index writes included)",
            f"{units.per_firing} WRU",
            f"the claim's PutItem alone: {units.claim} WRU",
            ratio(units.per_firing, units.claim),
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
    memory = template_memory()
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
        )
        jobs, minutes, imports, book = min(args.jobs, 200), min(args.minutes, 2), 1, 8
    else:
        plan = throughput.Plan(repeats=args.repeats, memory_mb=memory)
        jobs, minutes, imports, book = args.jobs, args.minutes, args.import_repeats, 100

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
    progress(f"cold start: imports in fresh interpreters, best of {imports}")
    cold = coldstart.measure(imports)
    inputs = cost.inputs(results, booked, memory)

    table: list[Row] = [
        *expansion.rows(expanded),
        *throughput.rows(results),
        *coldstart.rows(cold),
        *request_rows(results, booked),
        *cost.rows(inputs),
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
