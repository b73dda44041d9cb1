"""Section 4: what a firing costs in AWS requests and DynamoDB request units.

Requests are counted generically: every request a tick made (botocore's ``before-call``,
whatever the operation), divided by its firings, for the largest tick of ``overlap: allow``
jobs (issue 28: at most 1.05) and of ``overlap: skip`` jobs (at most 1.1), and per tick with
nothing due. Request units are the ledger's (``benchmarks.accounting``): every item a steady
tick and the recorder's closes wrote and read, from its size read back, a firing's on its job's
partitions and its share of the rest: "full history", each run kept. Issue 28's targets: at most
1.5 write units a firing of an ``overlap: allow`` job, 2.5 of an ``overlap: skip`` job.
"""

from __future__ import annotations

from collections.abc import Mapping

from benchmarks.accounting import Accounting, described
from benchmarks.ledger import wru
from benchmarks.table import Row, ratio
from benchmarks.throughput import Results

REQUESTS_ALLOW = 1.05  # issue 28: requests per firing of the ticker, overlap: allow
REQUESTS_SKIP = 1.1  # ... overlap: skip
WRU_ALLOW = 1.5  # issue 28: write units per firing with full history, overlap: allow
WRU_SKIP = 2.5  # ... overlap: skip
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


def requests_row(results: Results, skip: bool = False) -> Row | None:
    """The ticker's requests per firing of the largest tick (``skip``: of overlap: skip jobs)."""
    runs = results.skip if skip else results.concurrent[results.largest]
    if not runs:
        return None
    large = results.best(runs)
    total = sum(large.calls.values())
    hot = total / large.firings
    kind, budget = ("skip", REQUESTS_SKIP) if skip else ("allow", REQUESTS_ALLOW)
    return Row(
        "4 requests",
        f"AWS requests per firing, ticker, overlap: {kind}: all {total:,} of a "
        f"{large.firings:,}-firing tick ({_per(large.calls, large.firings, 0.05)})",
        f"{hot:.3f}",
        "the floor: 1 (its Invoke)",
        ratio(hot, 1.0, digits=3),
        f"<= {budget:g}",
        hot <= budget,
    )


def request_rows(results: Results, acc: Accounting) -> list[Row]:
    marginal = results.per_firing_calls()
    per_tick = results.per_tick_calls()
    tick_total = sum(per_tick.values())
    recorder = sum(acc.recorder_calls.values())
    large = results.best(results.concurrent[results.largest])
    hot = sum(large.calls.values()) / large.firings
    out = [row for row in (requests_row(results), requests_row(results, skip=True)) if row]
    return [
        *out,
        Row(
            "4 requests",
            f"  beyond the {min(results.plan.sizes):,}-firing tick, per firing "
            f"({_per(marginal, 1)})",
            f"{sum(marginal.values()):.3f}",
            "the floor: 1",
            ratio(sum(marginal.values()), 1.0, digits=3),
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


def units_row(acc: Accounting, skip: bool = False) -> Row:
    """Write units per firing, full history, of an ``overlap: allow`` (``skip``) job."""
    units = acc.per_firing(write=True, skip=skip)
    kind, budget = ("skip", WRU_SKIP) if skip else ("allow", WRU_ALLOW)
    floor = wru(acc.sizes.claimed)
    return Row(
        "4 writes",
        f"WRU per firing, overlap: {kind}, full history, a tick of {acc.all_firings:,} "
        f"({described(acc.breakdown(write=True, skip=skip))})",
        f"{units:.2f} WRU",
        f"the floor: one conditional write of the run, {floor} WRU",
        ratio(units, floor, digits=2),
        f"<= {budget:g} WRU",
        units <= budget,
    )


def write_rows(acc: Accounting) -> list[Row]:
    """The ledger's units per firing, and the items' sizes read back."""
    sizes = acc.sizes
    reads = acc.per_firing(write=False)
    watch = "read back" if sizes.watch_read_back else "modelled: the store wrote none"
    return [
        units_row(acc),
        units_row(acc, skip=True),
        Row(
            "4 writes",
            f"RRU per firing, overlap: allow ({described(acc.breakdown(write=False))})",
            f"{reads:.2f} RRU",
            f"a tick with nothing due: {acc.per_tick(write=False):g} RRU, "
            f"{acc.per_tick(write=True):g} WRU",
        ),
        Row(
            "4 writes",
            f"  items: the run claimed {sizes.claimed} B, after the tick {sizes.dispatched} B, "
            f"ended {sizes.ended} B; the slot {sizes.slot} B; the watermark {sizes.watermark} B; "
            f"a watch item {sizes.watch_fixed} + {sizes.watch_per_firing:.1f} B a firing "
            f"({watch})",
            f"{sizes.ended} B",
            "a write unit: 1,024 B",
        ),
    ]
