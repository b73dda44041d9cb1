"""What every part of the executor works with (the settings, the claim store, the clock, the
metrics), handed over once instead of four arguments to each part."""

from __future__ import annotations

from dataclasses import dataclass

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.clock import Clock
from mini_scheduler.config import Settings
from mini_scheduler.metrics import Metrics


@dataclass(frozen=True, slots=True)
class Means:
    settings: Settings
    claims: ClaimStore
    clock: Clock
    metrics: Metrics


class Part:
    """A part of the executor (:class:`.dispatch.Dispatching`, :class:`.sweeper.Sweeper`,
    :class:`.batches.MinuteWrites`, :class:`.skips.Skips`): the means as its attributes."""

    def __init__(self, means: Means) -> None:
        self.settings = means.settings
        self.claims = means.claims
        self.clock = means.clock
        self.metrics = means.metrics
