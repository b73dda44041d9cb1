"""Tick throughput: a tick with N due firings against DynamoDB Local and the stub Lambda.

Every figure is a time from the tick's start to the answer of its last ``Invoke`` (the last
dispatch), best of a few ticks (wall clock: the machine is shared, the best run is the one least
disturbed), beside two baselines measured in the same run: the floor (``benchmarks.floor``: a
bare boto3 ``Invoke`` loop on the same stub, as many calls as the largest tick has firings, as
many threads as ``DISPATCH_WORKERS``), and the same tick run sequentially
(``DISPATCH_WORKERS=1``: claim, invoke, mark, one firing after another). The targets are ratios
to them (issue 13): the largest tick within 1.5x the floor's wall time and at least 10x faster
than sequential; the ticker's CPU per firing within 1.5x the floor's CPU per call (issue 28:
1.2x, a row of its own). Each tick is checked against the stub's counts: every due firing
dispatched exactly once, nothing else.

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

"Defaults that hold": at the template's ticker memory, a tick of ``FANOUT_THRESHOLD`` firings,
and one shard's share of the fanned-out tick, must each take at most 10 s of the ticker's CPU
(CPU per firing measured here x firings / the memory's share of a vCPU); the table also says how
many firings a minute a default stack serves by that rule.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from benchmarks import defaults, floor
from benchmarks.floor import Floor
from benchmarks.rig import FIRST_MINUTE, Bench, Rig, TickRun, cron_file
from benchmarks.table import Row, ratio, seconds
from mini_scheduler.jobs import CronFile
from mini_scheduler.tick import Shard

MINUTE = timedelta(minutes=1)
_DEFAULTS = defaults.read()  # the deployment's defaults (memory, FANOUT_*, DISPATCH_WORKERS)
VCPU_MB = 1769  # Lambda: one vCPU's worth of CPU at 1,769 MB, in proportion below it
# Targets (issue 13), judged as ratios in one run; a missed one is printed, never failed.
FLOOR_CPU = 1.5  # ticker CPU per firing / the floor's CPU per call
FLOOR_CPU_28 = 1.2  # issue 28's target for the same ratio (overlap: allow)
FLOOR_WALL = 1.5  # the largest tick's time to its last dispatch / the floor's wall time
SEQUENTIAL = 10.0  # the largest tick at least this many times faster than sequential
CPU_BUDGET = 10.0  # seconds of CPU at the template's memory, per ticker invocation


@dataclass(frozen=True)
class FanOut:
    """A tick of ``jobs`` due firings on a ticker that fans out past ``threshold``."""

    jobs: int
    threshold: int  # FANOUT_THRESHOLD
    shards: int  # FANOUT_SHARDS
    workers: int  # DISPATCH_WORKERS
    label: str  # "default" or "recommended"


@dataclass(frozen=True)
class Plan:
    """What to run; ``make bench`` uses the defaults, the smoke test a tiny plan."""

    sizes: tuple[int, ...] = (100, 1000)
    workers: int = _DEFAULTS.dispatch_workers  # DISPATCH_WORKERS' default
    sweep: tuple[int, ...] = (4, 8, 32, 64)  # other worker counts, on the largest size
    repeats: int = 2  # ticks per figure (best of)
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
        if n == largest:  # the floor just before the tick it is the floor of: the same noise
            progress(f"the floor: {n} bare Invokes, {plan.workers} threads, best of {plan.repeats}")
            results.floor = floor.measure(rig, calls=n, workers=plan.workers, repeats=plan.repeats)
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
    found = results.floor
    out: list[Row] = []
    for n in plan.sizes:
        best = results.best(results.concurrent[n])
        seq = results.sequential[n]
        speedup = seq.to_last_dispatch / best.to_last_dispatch
        figure = (
            f"{n:,} due, {plan.workers} workers: start -> last dispatch "
            f"(best of {len(results.concurrent[n])})"
        )
        against_sequential = Row(
            "2 tick",
            figure,
            seconds(best.to_last_dispatch),
            f"sequential, 1 worker: {seconds(seq.to_last_dispatch)}",
            ratio(best.to_last_dispatch, seq.to_last_dispatch, faster=True),
        )
        if n != results.largest:
            out.append(against_sequential)
            continue
        if found is not None:
            out.append(
                Row(
                    "2 tick",
                    figure,
                    seconds(best.to_last_dispatch),
                    f"the floor, {found.calls:,} bare Invokes: {seconds(found.wall)}",
                    ratio(best.to_last_dispatch, found.wall, digits=2),
                    f"<= {FLOOR_WALL:g}x the floor",
                    best.to_last_dispatch <= FLOOR_WALL * found.wall,
                )
            )
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
        out.append(
            Row(
                "2 tick",
                figure,
                seconds(best.to_last_dispatch),
                f"sequential, 1 worker: {seconds(seq.to_last_dispatch)}",
                ratio(best.to_last_dispatch, seq.to_last_dispatch, faster=True),
                f">= {SEQUENTIAL:g}x faster (Invoke {results.latency * 1000:.0f} ms)",
                speedup >= SEQUENTIAL,
            )
        )
    return out


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


def rows(results: Results) -> list[Row]:
    plan = results.plan
    out = _floor_rows(results) + _tick_rows(results) + _fanout_rows(results)
    every = [
        run
        for runs in (
            *results.concurrent.values(),
            *results.sweep.values(),
            *(f.shard for f in results.fanouts),
        )
        for run in runs
    ] + list(results.sequential.values())
    sizes = [f"{n:,}" for n in plan.sizes] + [
        f"shard {f.shard[0].firings:,}" for f in results.fanouts if f.shard
    ]
    once = sum(r.dispatched_once for r in every)
    due = sum(r.firings for r in every)
    out.append(
        Row(
            "2 exactly once",
            "each due firing dispatched exactly once (stub's count per firingId)",
            f"{once:,} of {due:,}",
            f"{len(every)} ticks: {', '.join(sizes)}; sweep, sequential",
            "",
            "all exactly once",
            once == due,
        )
    )

    seq = results.sequential[results.largest]
    knee = results.knee()
    for workers in sorted(results.sweep):
        runs = results.sweep[workers]
        best = results.best(runs)
        note = ", the default" if workers == plan.workers else ""
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

    cpu = results.cpu_per_firing()
    empty = results.best(results.empty)
    found = results.floor
    cpu_figure = f"ticker CPU per firing ({results.largest:,} due; its requests, log line, EMF)"
    if found is not None:
        out.append(
            Row(
                "2 CPU",
                cpu_figure,
                f"{cpu * 1000:.2f} ms",
                f"the floor: {found.cpu_per_call * 1000:.2f} ms per Invoke",
                ratio(cpu, found.cpu_per_call, digits=2),
                f"<= {FLOOR_CPU:g}x the floor",
                cpu <= FLOOR_CPU * found.cpu_per_call,
            )
        )
        out.append(
            Row(
                "2 CPU",
                "  the same, issue 28's target (overlap: allow)",
                f"{cpu * 1000:.2f} ms",
                f"the floor: {found.cpu_per_call * 1000:.2f} ms per Invoke",
                ratio(cpu, found.cpu_per_call, digits=2),
                f"<= {FLOOR_CPU_28:g}x the floor",
                cpu <= FLOOR_CPU_28 * found.cpu_per_call,
            )
        )
    else:
        seq_cpu = max(0.0, seq.cpu - results.empty_cpu()) / seq.firings
        out.append(
            Row(
                "2 CPU",
                cpu_figure,
                f"{cpu * 1000:.2f} ms",
                f"sequential: {seq_cpu * 1000:.2f} ms",
                ratio(cpu, seq_cpu),
            )
        )
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
    return out + defaults_rows(results)


@dataclass(frozen=True)
class Capacity:
    """What a default stack's ticker does at the template's memory, by the bench's rule."""

    memory_mb: int
    threshold: int  # FANOUT_THRESHOLD
    shards: int  # FANOUT_SHARDS
    cpu: float  # CPU seconds per firing of a tick at one vCPU (this machine)
    shard_cpu: float  # ... of one shard's tick
    shard_firings: int  # one shard's share of the measured fanned-out tick
    parent_cpu: float  # CPU seconds of the measured parent tick (expansion, shard invokes)
    parent_jobs: int

    @property
    def share(self) -> float:
        return self.memory_mb / VCPU_MB

    def seconds(self, firings: float, cpu: float) -> float:
        """CPU seconds at the template's memory of ``firings`` at ``cpu`` a firing."""
        return firings * cpu / self.share

    def serves(self, budget: float = CPU_BUDGET) -> int:
        """The most firings a minute for which every invocation stays within ``budget`` seconds
        of CPU: up to ``threshold`` in one invocation, past it ``1 / shards`` in each shard
        (the parent's own CPU left out)."""
        alone = budget * self.share / self.cpu if self.cpu > 0 else float("inf")
        if alone < self.threshold:
            return int(alone)
        per_shard = budget * self.share / self.shard_cpu if self.shard_cpu > 0 else float("inf")
        most = max(float(self.threshold), self.shards * per_shard)
        return int(min(most, 10**9))


def capacity(results: Results) -> Capacity:
    plan = results.plan
    cpu = results.cpu_per_firing()
    runs = results.default_fanout
    if runs is None or not runs.shard:
        return Capacity(plan.memory_mb, plan.threshold, plan.shards, cpu, cpu, 0, 0.0, 0)
    parent = min(runs.parent, key=lambda r: r.cpu)
    return Capacity(
        memory_mb=plan.memory_mb,
        threshold=plan.threshold,
        shards=plan.shards,
        cpu=cpu,
        shard_cpu=results.cpu_per_firing(runs.shard),
        shard_firings=runs.shard[0].firings,
        parent_cpu=parent.cpu,
        parent_jobs=runs.fanout.jobs,
    )


def defaults_rows(results: Results) -> list[Row]:
    """ "Defaults that hold": the template's memory, FANOUT_THRESHOLD and FANOUT_SHARDS."""
    c = capacity(results)
    section = "2 defaults"
    at = f"at {c.memory_mb} MB ({c.share:.3f} vCPU)"
    budget = f"the budget: {CPU_BUDGET:g} s of CPU"
    tick = c.seconds(c.threshold, c.cpu)
    out = [
        Row(
            section,
            f"a tick of FANOUT_THRESHOLD={c.threshold:,} firings {at}: CPU "
            f"({c.cpu * 1000:.2f} ms/firing at 1 vCPU)",
            seconds(tick),
            budget,
            ratio(tick, CPU_BUDGET, digits=2),
            f"<= {CPU_BUDGET:g} s",
            tick <= CPU_BUDGET,
        )
    ]
    if c.shard_firings:
        shard = c.seconds(c.shard_firings, c.shard_cpu)
        parent = c.parent_cpu / c.share
        out += [
            Row(
                section,
                f"  one shard's share, {c.shard_firings:,} of {c.parent_jobs:,} due {at}: CPU "
                f"({c.shard_cpu * 1000:.2f} ms/firing)",
                seconds(shard),
                budget,
                ratio(shard, CPU_BUDGET, digits=2),
                f"<= {CPU_BUDGET:g} s",
                shard <= CPU_BUDGET,
            ),
            Row(
                section,
                f"  the parent tick of {c.parent_jobs:,} due ({c.shards} shard invokes) {at}: CPU",
                seconds(parent),
                budget,
                ratio(parent, CPU_BUDGET, digits=2),
                f"<= {CPU_BUDGET:g} s",
                parent <= CPU_BUDGET,
            ),
        ]
    out.append(
        Row(
            section,
            f"firings a minute a default stack serves ({c.shards} shards; each invocation "
            f"<= {CPU_BUDGET:g} s of CPU)",
            f"{c.serves():,}",
            f"within its minute (60 s of CPU): {c.serves(60.0):,}",
        )
    )
    return out
