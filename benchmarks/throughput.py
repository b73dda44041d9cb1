"""Tick throughput: a tick with N due firings against DynamoDB Local and the stub Lambda.

Every figure is a time from the tick's start to the answer of its last ``Invoke`` (the last
dispatch), best of a few ticks (wall clock: the machine is shared, the best run is the one least
disturbed), beside the same tick run sequentially (``DISPATCH_WORKERS=1``: claim, invoke, mark,
one firing after another) in the same run. Each tick is checked against the stub's counts:
every due firing dispatched exactly once, nothing else.

The ticker's CPU time (``time.process_time`` of this process: the stub and the emulator run in
processes of their own) is reported per firing, because Lambda gives a function CPU in
proportion to its memory (1,769 MB = one vCPU): a tick that is CPU-bound here is slower still at
the template's 256 MB, and the projection says by how much.

Past ``FANOUT_THRESHOLD`` (2,000 firings) a deployed ticker invokes itself once per shard
(``FANOUT_SHARDS``, 8): for 10,000 firings the parent tick (expansion and the shard invokes) and
one shard's tick (1,250 firings, the per-invocation figure) are measured; a deployment runs the
shards in parallel, each in its own invocation. The same is measured for the settings this
benchmark recommends (a lower threshold, more shards, fewer workers), so that the table shows
what they buy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from benchmarks.rig import FIRST_MINUTE, Bench, Rig, TickRun, cron_file
from benchmarks.table import Row, ratio, seconds
from mini_scheduler.config import Settings
from mini_scheduler.jobs import CronFile
from mini_scheduler.tick import Shard

MINUTE = timedelta(minutes=1)
_DEFAULTS = Settings(state_table="bench")  # the deployment's defaults (FANOUT_*, DISPATCH_WORKERS)
VCPU_MB = 1769  # Lambda: one vCPU's worth of CPU at 1,769 MB, in proportion below it


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
    memory_mb: int = 256  # template.yaml's MemorySize, for the CPU projection

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

    for n in plan.sizes:
        progress(f"{n} firings, {plan.workers} workers, best of {plan.repeats}")
        bench = rig.bench(crons[n], workers=plan.workers)
        results.concurrent[n] = _ticks(rig, bench, plan.repeats)
        rig.drop_table(bench.table)
        progress(f"{n} firings, sequential (1 worker)")
        bench = rig.bench(crons[n], workers=1)
        results.sequential[n] = _ticks(rig, bench, 1)[0]
        rig.drop_table(bench.table)

    largest = max(plan.sizes)
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


def _tick_rows(results: Results) -> list[Row]:
    plan = results.plan
    out: list[Row] = []
    for n in plan.sizes:
        best = results.best(results.concurrent[n])
        seq = results.sequential[n]
        speedup = seq.to_last_dispatch / best.to_last_dispatch
        is_target = n == 1000
        out.append(
            Row(
                "2 tick",
                f"{n:,} due, {plan.workers} workers: start -> last dispatch "
                f"(best of {len(results.concurrent[n])})",
                seconds(best.to_last_dispatch),
                f"sequential, 1 worker: {seconds(seq.to_last_dispatch)}",
                ratio(best.to_last_dispatch, seq.to_last_dispatch, faster=True),
                f"<= 5 s, >= 10x (Invoke {results.latency * 1000:.0f} ms)" if is_target else "",
                (best.to_last_dispatch <= 5.0 and speedup >= 10) if is_target else None,
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
                "< 60 s (its minute)",
                shard.firings * cpu / share < 60,
            ),
        ]
    return out


def rows(results: Results) -> list[Row]:
    plan = results.plan
    out = _tick_rows(results) + _fanout_rows(results)
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
    seq_cpu = max(0.0, seq.cpu - results.empty_cpu()) / seq.firings
    share = plan.memory_mb / VCPU_MB
    empty = results.best(results.empty)
    out += [
        Row(
            "2 CPU",
            f"ticker CPU per firing ({results.largest:,} due; 3 calls, log line, EMF)",
            f"{cpu * 1000:.2f} ms",
            f"sequential: {seq_cpu * 1000:.2f} ms",
            ratio(cpu, seq_cpu),
        ),
        Row(
            "2 CPU",
            f"1,000 firings' CPU at {plan.memory_mb} MB = {share:.3f} vCPU (projection)",
            seconds(1000 * cpu / share),
            f"at {VCPU_MB} MB (1 vCPU): {seconds(1000 * cpu)}",
            ratio(1000 * cpu / share, 1000 * cpu),
            "<= 5 s",
            1000 * cpu / share <= 5.0,
        ),
        Row(
            "2 CPU",
            f"empty tick, nothing due (best of {len(results.empty)}, "
            f"{sum(empty.calls.values())} requests)",
            seconds(empty.wall),
            f"its CPU: {seconds(empty.cpu)}",
            "",
        ),
    ]
    return out
