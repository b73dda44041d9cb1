"""Tick throughput: a tick with N due firings against DynamoDB Local and the stub Lambda.

Every figure is a time from the tick's start to the answer of its last ``Invoke`` (the last
dispatch), best of a few ticks (wall clock: the machine is shared, the best run is the one least
disturbed), beside two baselines measured in the same run: the floor (``benchmarks.floor``: a
bare boto3 ``Invoke`` loop on the same stub, as many calls as the largest tick has firings, as
many threads as ``DISPATCH_WORKERS``), and the same tick run sequentially
(``DISPATCH_WORKERS=1``: one firing after another). The targets are ratios to them: issue 28's,
the largest tick of ``overlap: allow`` jobs within 1.3x the floor's wall time and its CPU per
firing within 1.2x the floor's CPU per call; the same tick of ``overlap: skip`` jobs (each
firing takes its job's slot; the recorder closes the runs between its ticks, untimed) within
1.4x and 1.3x; and issue 13's, the ``allow`` tick at least 10x faster than sequential. The floor
and the largest ticks, allow and skip, run in rounds (a loop of each, one after another), so
that the machine's noise falls on them alike. Each tick is checked against the stub's counts:
every due firing dispatched exactly once, nothing else.

The ticker's CPU time (``time.process_time`` of this process: the stub and the emulator run in
processes of their own) is reported per firing, beyond an empty tick's, because Lambda gives a
function CPU in proportion to its memory (1,769 MB = one vCPU): a tick that is CPU-bound here is
slower still at the template's memory, and the projection says by how much.

Past ``FANOUT_THRESHOLD`` a deployed ticker invokes itself once per shard (``FANOUT_SHARDS``):
for 10,000 firings the parent tick (expansion and the shard invokes) and one shard's tick (the
per-invocation figure) are measured; a deployment runs the shards in parallel, each in its own
invocation. The "default" fan-out uses template.yaml's defaults (``benchmarks.defaults``); the
same is measured for the settings this benchmark recommends (a lower threshold, more shards),
so that the table shows what they buy.

"Defaults that hold" (``benchmarks.budget``) and the scale on paper (``benchmarks.scale``) take
their CPU per firing from here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from benchmarks import defaults, floor, recording
from benchmarks.floor import Floor
from benchmarks.rig import FIRST_MINUTE, Bench, Rig, TickRun, cron_file
from benchmarks.table import Row, ratio, seconds
from mini_scheduler.jobs import CronFile
from mini_scheduler.tick import Shard

MINUTE = timedelta(minutes=1)
_DEFAULTS = defaults.read()  # the deployment's defaults (memory, FANOUT_*, DISPATCH_WORKERS)
VCPU_MB = 1769  # Lambda: one vCPU's worth of CPU at 1,769 MB, in proportion below it
# Targets, judged as ratios in one run; a missed one is printed, never failed.
FLOOR_CPU = 1.2  # issue 28: ticker CPU per firing / the floor's CPU per call (overlap: allow)
FLOOR_WALL = 1.3  # issue 28: the largest tick's time to its last dispatch / the floor's wall
SKIP_CPU = 1.3  # issue 28: the same of a tick of overlap: skip jobs
SKIP_WALL = 1.4
SEQUENTIAL = 10.0  # issue 13: the largest tick at least this many times faster than sequential
CPU_BUDGET = 10.0  # seconds of CPU at the template's memory, per ticker invocation


@dataclass(frozen=True)
class FanOut:
    """A tick of ``jobs`` due firings on a ticker that fans out past ``threshold``."""

    jobs: int
    threshold: int  # FANOUT_THRESHOLD
    shards: int  # FANOUT_SHARDS
    workers: int  # DISPATCH_WORKERS
    label: str  # "default" or "recommended"


_UNSWEPT = 600
"""CLAIM_LEASE_SECONDS of the largest ticks' rounds: their runs are due to the sweep past it."""


@dataclass(frozen=True)
class Plan:
    """What to run; ``make bench`` uses the defaults, the smoke test a tiny plan."""

    sizes: tuple[int, ...] = (100, 1000)
    workers: int = _DEFAULTS.dispatch_workers  # DISPATCH_WORKERS' default
    sweep: tuple[int, ...] = (4, 8, 32, 64)  # other worker counts, on the largest size
    repeats: int = 2  # ticks per figure (best of)
    rounds: int = 3  # the largest tick's: its floor, an allow tick and a skip tick each (best of)

    def __post_init__(self) -> None:
        if self.rounds * 60 > _UNSWEPT:
            raise ValueError(f"{self.rounds} rounds would sweep: at most {_UNSWEPT // 60}")

    fanouts: tuple[FanOut, ...] = (
        FanOut(
            10_000,
            _DEFAULTS.fanout_threshold,
            _DEFAULTS.fanout_shards,
            _DEFAULTS.dispatch_workers,
            "default",
        ),
        FanOut(1000, 250, 8, 16, "recommended"),
        FanOut(10_000, 250, 40, 16, "recommended"),
    )
    empty_repeats: int = 5
    warmup: int = 400  # firings of an untimed first tick: the emulator's JIT warms up
    memory_mb: int = _DEFAULTS.memory_mb  # the ticker's MemorySize, for the CPU projection
    threshold: int = _DEFAULTS.fanout_threshold  # FANOUT_THRESHOLD, for "defaults that hold"
    shards: int = _DEFAULTS.fanout_shards  # FANOUT_SHARDS, likewise

    @property
    def fanout(self) -> FanOut | None:
        """The deployment's defaults, which the cost model prices."""
        return next((f for f in self.fanouts if f.label == "default"), None)


@dataclass
class FanOutRuns:
    fanout: FanOut
    parent: list[TickRun] = field(default_factory=list)
    shard: list[TickRun] = field(default_factory=list)  # shard 0's ticks


@dataclass
class Results:
    plan: Plan
    latency: float
    concurrent: dict[int, list[TickRun]] = field(default_factory=dict)  # size -> ticks
    sequential: dict[int, TickRun] = field(default_factory=dict)
    sweep: dict[int, list[TickRun]] = field(default_factory=dict)  # workers -> ticks (largest)
    empty: list[TickRun] = field(default_factory=list)
    fanouts: list[FanOutRuns] = field(default_factory=list)
    floor: Floor | None = None  # the bare Invoke loop, as many calls as the largest tick
    skip: list[TickRun] = field(default_factory=list)  # the largest tick, overlap: skip jobs
    steady: TickRun | None = None  # the largest tick, a table's third minute: its sweep reads

    @property
    def largest(self) -> int:
        return max(self.plan.sizes)

    @property
    def default_fanout(self) -> FanOutRuns | None:
        return next((f for f in self.fanouts if f.fanout.label == "default"), None)

    def best(self, runs: Sequence[TickRun]) -> TickRun:
        return min(runs, key=lambda r: r.to_last_dispatch)

    def sequential_rate(self) -> float:
        """Seconds per firing, one after another (the largest sequential run)."""
        run = self.sequential[self.largest]
        return run.to_last_dispatch / run.firings

    def per_firing_calls(self) -> dict[str, float]:
        """Requests per firing: the difference between the largest and smallest sizes."""
        small, large = min(self.plan.sizes), self.largest
        a, b = self.best(self.concurrent[small]), self.best(self.concurrent[large])
        names = set(a.calls) | set(b.calls)
        span = b.firings - a.firings
        return {n: (b.calls.get(n, 0) - a.calls.get(n, 0)) / span for n in sorted(names)}

    def per_tick_calls(self) -> dict[str, int]:
        """Requests a tick makes whatever its firings: an empty tick's."""
        return dict(sorted(self.best(self.empty).calls.items())) if self.empty else {}

    def empty_cpu(self) -> float:
        return min((r.cpu for r in self.empty), default=0.0)

    def cpu_per_firing(self, runs: Sequence[TickRun] | None = None) -> float:
        """CPU seconds per firing beyond an empty tick's (the largest tick by default)."""
        run = min(runs or self.concurrent[self.largest], key=lambda r: r.cpu)
        return max(0.0, run.cpu - self.empty_cpu()) / max(1, run.firings)

    def knee(self) -> int:
        """The fewest workers within 10% of the best time to dispatch the largest tick."""
        times = {w: self.best(runs).to_last_dispatch for w, runs in self.sweep.items()}
        fastest = min(times.values())
        return min(w for w, t in times.items() if t <= fastest * 1.10)


def _progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _ticks(rig: Rig, bench: Bench, count: int) -> list[TickRun]:
    return [rig.tick(bench, FIRST_MINUTE + k * MINUTE) for k in range(count)]


def _steady(rig: Rig, cron: CronFile, plan: Plan) -> TickRun:
    """A steady tick of ``cron``: the third minute of one table, the runs of the two before
    closed by the recorder (untimed), so that its sweep reads the first minute's runs (past
    their lease) and forgets them, as every tick of jobs firing each minute does."""
    bench = rig.bench(cron, workers=plan.workers)
    closer = recording.recorder(rig, bench)
    for k in range(2):
        minute = FIRST_MINUTE + k * MINUTE
        rig.tick(bench, minute)
        recording.close_all(rig, closer, bench, minute)
    run = rig.tick(bench, FIRST_MINUTE + 2 * MINUTE)
    rig.drop_table(bench.table)
    if not run.calls.get("dynamodb.BatchGetItem"):
        raise AssertionError(f"the steady tick swept nothing: {run.calls}")
    return run


def _largest(
    rig: Rig, n: int, cron: CronFile, plan: Plan
) -> tuple[Floor, list[TickRun], list[TickRun]]:
    """The floor, a tick of ``n`` ``overlap: allow`` jobs and one of ``overlap: skip`` jobs, a
    loop of each per round, one after another: the machine's noise (a shared one) falls on all
    three alike, where a floor measured before the ticks may catch a slow minute they miss.
    The ticks are a table's minutes one after another, their claims' lease long enough that
    none sweeps the runs of another (a steady tick's sweep reads each run once more, past its
    lease); the skip ticks' runs are closed by the recorder before the next round (untimed), so
    that every firing finds its slot free."""
    allow = rig.bench(cron, workers=plan.workers, lease=_UNSWEPT)
    skip = rig.bench(cron_file(n, overlap="skip"), workers=plan.workers, lease=_UNSWEPT)
    closer = recording.recorder(rig, skip)
    loops: list[Floor] = []
    allowed: list[TickRun] = []
    skipped: list[TickRun] = []
    for k in range(plan.rounds):
        minute = FIRST_MINUTE + k * MINUTE
        loops.append(floor.measure(rig, calls=n, workers=plan.workers, repeats=1))
        allowed.append(rig.tick(allow, minute))
        skipped.append(rig.tick(skip, minute))
        recording.close_all(rig, closer, skip, minute)
    rig.drop_table(allow.table)
    rig.drop_table(skip.table)
    return Floor(n, plan.workers, [run for loop in loops for run in loop.runs]), allowed, skipped


def _fan_out(rig: Rig, spec: FanOut, repeats: int) -> FanOutRuns:
    runs = FanOutRuns(spec)
    cron = cron_file(spec.jobs, shards=spec.shards)
    bench = rig.bench(
        cron, workers=spec.workers, fanout=True, fanout_threshold=spec.threshold, shards=spec.shards
    )
    shard = Shard(0, spec.shards)
    for k in range(repeats):
        minute = FIRST_MINUTE + k * MINUTE
        parent = rig.tick(bench, minute, expect=set())
        if parent.shard_events != spec.shards:
            raise AssertionError(
                f"the parent tick invoked {parent.shard_events} shards, not {spec.shards}: "
                f"{parent.summary.to_json()}"
            )
        runs.parent.append(parent)
        runs.shard.append(rig.tick(bench, minute, shard=shard))
    rig.drop_table(bench.table)
    return runs


def run(
    rig: Rig, plan: Plan, latency: float, progress: Callable[[str], None] = _progress
) -> Results:
    results = Results(plan, latency)
    crons: dict[int, CronFile] = {n: cron_file(n) for n in plan.sizes}

    if plan.warmup:
        progress(f"warm-up tick, {plan.warmup} firings (untimed)")
        bench = rig.bench(cron_file(plan.warmup), workers=plan.workers)
        _ticks(rig, bench, 1)
        rig.drop_table(bench.table)

    progress(f"empty ticks (no firing due), best of {plan.empty_repeats}")
    never = cron_file(1, statement="0 0 0 1 1 ? 2099")
    bench = rig.bench(never, workers=plan.workers)
    results.empty = _ticks(rig, bench, plan.empty_repeats)
    rig.drop_table(bench.table)

    largest = max(plan.sizes)
    for n in plan.sizes:
        if n == largest:
            progress(
                f"the floor ({n} bare Invokes), {n} firings and {n} of overlap: skip jobs, "
                f"{plan.workers} workers, a round each, best of {plan.rounds}"
            )
            results.floor, results.concurrent[n], results.skip = _largest(rig, n, crons[n], plan)
            progress(f"{n} firings, a steady tick: the third minute of a table, its sweep reading")
            results.steady = _steady(rig, crons[n], plan)
        else:
            progress(f"{n} firings, {plan.workers} workers, best of {plan.repeats}")
            bench = rig.bench(crons[n], workers=plan.workers)
            results.concurrent[n] = _ticks(rig, bench, plan.repeats)
            rig.drop_table(bench.table)
        progress(f"{n} firings, sequential (1 worker)")
        bench = rig.bench(crons[n], workers=1)
        results.sequential[n] = _ticks(rig, bench, 1)[0]
        rig.drop_table(bench.table)

    results.sweep[plan.workers] = results.concurrent[largest]
    for workers in plan.sweep:
        progress(f"{largest} firings, {workers} workers, best of {plan.repeats}")
        bench = rig.bench(crons[largest], workers=workers)
        results.sweep[workers] = _ticks(rig, bench, plan.repeats)
        rig.drop_table(bench.table)

    for spec in plan.fanouts:
        progress(
            f"{spec.jobs} firings, FANOUT_THRESHOLD={spec.threshold}, FANOUT_SHARDS={spec.shards}"
            f", {spec.workers} workers: parent tick and shard 0 "
            f"({spec.jobs // spec.shards} firings), best of {plan.repeats}"
        )
        results.fanouts.append(_fan_out(rig, spec, plan.repeats))
    return results


def _floor_rows(results: Results) -> list[Row]:
    found = results.floor
    if found is None:
        return []
    return [
        Row(
            "2 floor",
            f"the floor: {found.calls:,} bare boto3 Invokes (Event), {found.workers} threads, "
            f"same stub (best of {len(found.runs)})",
            seconds(found.wall),
            f"its CPU: {found.cpu_per_call * 1000:.2f} ms per call",
        )
    ]


def _tick_rows(results: Results) -> list[Row]:
    plan = results.plan
    out: list[Row] = []
    for n in plan.sizes:
        best = results.best(results.concurrent[n])
        seq = results.sequential[n]
        figure = (
            f"{n:,} due, {plan.workers} workers: start -> last dispatch "
            f"(best of {len(results.concurrent[n])})"
        )
        against_floor = wall_row(results) if n == results.largest else None
        if against_floor is not None:
            out.append(against_floor)
            figure = "  the same tick against sequential"
            if best.emulator_cpu is not None:
                out.append(
                    Row(
                        "2 tick",
                        "  DynamoDB Local's CPU during that tick (this machine's cores; on AWS "
                        "the table is remote)",
                        seconds(best.emulator_cpu),
                        f"the ticker's CPU: {seconds(best.cpu)}, on {os.cpu_count()} cores",
                        ratio(best.emulator_cpu, best.cpu, digits=2),
                    )
                )
        target = n == results.largest
        out.append(
            Row(
                "2 tick",
                figure,
                seconds(best.to_last_dispatch),
                f"sequential, 1 worker: {seconds(seq.to_last_dispatch)}",
                ratio(best.to_last_dispatch, seq.to_last_dispatch, faster=True),
                f">= {SEQUENTIAL:g}x faster (Invoke {results.latency * 1000:.0f} ms)"
                if target
                else "",
                seq.to_last_dispatch >= SEQUENTIAL * best.to_last_dispatch if target else None,
            )
        )
    skip = wall_row(results, skip=True)
    return out + ([skip] if skip is not None else [])


def _fanout_rows(results: Results) -> list[Row]:
    rate = results.sequential_rate()
    empty = results.best(results.empty)
    share = results.plan.memory_mb / VCPU_MB
    out: list[Row] = []
    for runs in results.fanouts:
        spec = runs.fanout
        n = spec.jobs
        parent = min(runs.parent, key=lambda r: r.wall)
        shard = results.best(runs.shard)
        total = parent.wall + shard.to_last_dispatch
        settings = f"threshold {spec.threshold}, {spec.shards} shards, {spec.workers} workers"
        section = f"2 fan-out {spec.label}"
        is_target = n == 1000
        cpu = results.cpu_per_firing(runs.shard)
        out += [
            Row(
                section,
                f"{n:,} due; {settings}: parent tick ({spec.shards} shard invokes)",
                seconds(parent.wall),
                f"empty tick: {seconds(empty.wall)}",
                ratio(parent.wall, empty.wall),
            ),
            Row(
                section,
                f"  one shard, {shard.firings:,} firings (per invocation): last dispatch",
                seconds(shard.to_last_dispatch),
                f"sequential {shard.firings:,}: ~{seconds(rate * shard.firings)} "
                f"(rate of the {results.largest:,} run)",
                ratio(shard.to_last_dispatch, rate * shard.firings, faster=True),
            ),
            Row(
                section,
                f"  parent + one shard ({spec.shards} shards in parallel, each its own Lambda)",
                seconds(total),
                f"sequential {n:,}: ~{seconds(rate * n)}",
                ratio(total, rate * n, faster=True),
                "<= 5 s, >= 10x" if is_target else "",
                (total <= 5.0 and rate * n / total >= 10) if is_target else None,
            ),
            Row(
                section,
                f"  one shard's CPU at {results.plan.memory_mb} MB = {share:.3f} vCPU "
                f"(projection; {cpu * 1000:.1f} ms/firing)",
                seconds(shard.firings * cpu / share),
                f"at {VCPU_MB} MB (1 vCPU): {seconds(shard.firings * cpu)}",
                ratio(shard.firings * cpu / share, shard.firings * cpu),
                f"<= {CPU_BUDGET:g} s",
                shard.firings * cpu / share <= CPU_BUDGET,
            ),
        ]
    return out


def _exactly_once_row(results: Results) -> Row:
    plan = results.plan
    every = [
        run
        for runs in (
            *results.concurrent.values(),
            *results.sweep.values(),
            *(f.shard for f in results.fanouts),
            results.skip,
        )
        for run in runs
    ] + list(results.sequential.values())
    sizes = [f"{n:,}" for n in plan.sizes] + [
        f"shard {f.shard[0].firings:,}" for f in results.fanouts if f.shard
    ]
    once = sum(r.dispatched_once for r in every)
    due = sum(r.firings for r in every)
    return Row(
        "2 exactly once",
        "each due firing dispatched exactly once (stub's count per firingId)",
        f"{once:,} of {due:,}",
        f"{len(every)} ticks: {', '.join(sizes)}; skip, sweep, sequential",
        "",
        "all exactly once",
        once == due,
    )


def _knee_rows(results: Results) -> list[Row]:
    seq = results.sequential[results.largest]
    knee = results.knee()
    out = []
    for workers in sorted(results.sweep):
        runs = results.sweep[workers]
        best = results.best(runs)
        note = ", the default" if workers == results.plan.workers else ""
        out.append(
            Row(
                "2 knee",
                f"{results.largest:,} due, DISPATCH_WORKERS={workers} (pool {workers}{note}): "
                f"CPU {results.cpu_per_firing(runs) * 1000:.1f} ms/firing, "
                f"peak {best.peak_in_flight} in flight",
                seconds(best.to_last_dispatch),
                f"sequential: {seconds(seq.to_last_dispatch)}",
                ratio(best.to_last_dispatch, seq.to_last_dispatch, faster=True),
                "knee (within 10% of the best)" if workers == knee else "",
            )
        )
    return out


def cpu_row(results: Results, skip: bool = False) -> Row:
    """The ticker's CPU per firing of the largest tick against the floor's per Invoke."""
    runs = results.skip if skip else results.concurrent[results.largest]
    cpu = results.cpu_per_firing(runs)
    kind, budget = ("skip", SKIP_CPU) if skip else ("allow", FLOOR_CPU)
    figure = (
        f"ticker CPU per firing, overlap: {kind} ({results.largest:,} due; its requests, "
        "log line, EMF)"
    )
    found = results.floor
    if found is None:
        seq = results.sequential[results.largest]
        seq_cpu = max(0.0, seq.cpu - results.empty_cpu()) / seq.firings
        return Row("2 CPU", figure, f"{cpu * 1000:.2f} ms", f"sequential: {seq_cpu * 1000:.2f} ms")
    return Row(
        "2 CPU",
        figure,
        f"{cpu * 1000:.2f} ms",
        f"the floor: {found.cpu_per_call * 1000:.2f} ms per Invoke",
        ratio(cpu, found.cpu_per_call, digits=2),
        f"<= {budget:g}x the floor",
        cpu <= budget * found.cpu_per_call,
    )


def _steady_row(results: Results, run: TickRun) -> Row:
    cpu = results.cpu_per_firing([run])
    reads = run.calls.get("dynamodb.BatchGetItem", 0)
    found = results.floor
    return Row(
        "2 CPU",
        f"  the same, a steady tick (its sweep reads the {run.firings:,} runs of two minutes "
        f"before, ended: BatchGetItem {reads})",
        f"{cpu * 1000:.2f} ms",
        f"the floor: {found.cpu_per_call * 1000:.2f} ms per Invoke" if found else "",
        ratio(cpu, found.cpu_per_call, digits=2) if found else "",
        "informational",
    )


def wall_row(results: Results, skip: bool = False) -> Row | None:
    """The largest tick's time to its last dispatch against the floor's wall time."""
    found = results.floor
    runs = results.skip if skip else results.concurrent[results.largest]
    if found is None or not runs:
        return None
    best = results.best(runs)
    kind, budget = ("skip", SKIP_WALL) if skip else ("allow", FLOOR_WALL)
    return Row(
        "2 tick",
        f"{best.firings:,} due, overlap: {kind}, {results.plan.workers} workers: start -> "
        f"last dispatch (best of {len(runs)})",
        seconds(best.to_last_dispatch),
        f"the floor, {found.calls:,} bare Invokes: {seconds(found.wall)}",
        ratio(best.to_last_dispatch, found.wall, digits=2),
        f"<= {budget:g}x the floor",
        best.to_last_dispatch <= budget * found.wall,
    )


def rows(results: Results) -> list[Row]:
    out = _floor_rows(results) + _tick_rows(results) + _fanout_rows(results)
    out += [_exactly_once_row(results), *_knee_rows(results), cpu_row(results)]
    if results.skip:
        out.append(cpu_row(results, skip=True))
    if results.steady is not None:
        out.append(_steady_row(results, results.steady))
    empty = results.best(results.empty)
    out.append(
        Row(
            "2 CPU",
            f"empty tick, nothing due (best of {len(results.empty)}, "
            f"{sum(empty.calls.values())} requests)",
            seconds(empty.wall),
            f"its CPU: {seconds(empty.cpu)}",
            "",
        )
    )
    return out
