"""Section 2's "defaults that hold": what a default stack's ticker does within its CPU budget.

At the template's ticker memory (``benchmarks.defaults``), a tick of ``FANOUT_THRESHOLD``
firings, and one shard's share of the fanned-out tick, must each take at most 10 s of the
ticker's CPU (CPU per firing measured in this run x firings / the memory's share of a vCPU, as
Lambda gives CPU in proportion to memory: 1,769 MB = one vCPU); the table also says how many
firings a minute a default stack serves by that rule. ``benchmarks.scale`` asks the same of a
million firings a minute.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.table import Row, ratio, seconds
from benchmarks.throughput import CPU_BUDGET, VCPU_MB, Results


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
    parent_invokes: int = 0  # the shards the measured parent invoked
    invoke_cpu: float = 0.0  # CPU seconds of one Invoke: the floor's, measured in the same run

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
        parent_invokes=parent.shard_events,
        invoke_cpu=results.floor.cpu_per_call if results.floor else 0.0,
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
