"""A tick as plan and execute: :mod:`.planning` decides (:mod:`.plan` is what it decides),
:mod:`.execute` writes, :mod:`.ticker` reads the inputs and answers (a short facade the handler
calls)."""

from mini_scheduler.tick.plan import Shard, TickPlan
from mini_scheduler.tick.planning import plan_tick
from mini_scheduler.tick.report import TickSummary
from mini_scheduler.tick.ticker import MAX_TICK_AHEAD, Ticker

__all__ = ["MAX_TICK_AHEAD", "Shard", "TickPlan", "TickSummary", "Ticker", "plan_tick"]
