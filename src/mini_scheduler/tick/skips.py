"""Firings recorded SKIPPED, one by one or as a missed range keyed by its first firing.

A record that cannot be written holds the watermark at its firing, so the next tick tries it
again; a deferred firing's holds nothing (its instant is long past) and is read again instead."""

from __future__ import annotations

import logging

from mini_scheduler import metrics as m
from mini_scheduler.claims.base import Deferred
from mini_scheduler.errors import StoreError
from mini_scheduler.jobs import Job
from mini_scheduler.model import Firing, SkipReason, iso_seconds, log_keys
from mini_scheduler.tick.lines import SKIPPED, SKIPPED_OVERLAP, SKIPPED_RANGE
from mini_scheduler.tick.means import Part
from mini_scheduler.tick.plan import SkipRange
from mini_scheduler.tick.report import Tally

log = logging.getLogger("mini_scheduler.ticker")


class Skips(Part):
    """Writes SKIPPED records and says each one written."""

    def skip(
        self,
        job: Job,
        firing: Firing,
        reason: str,
        tally: Tally,
        deferred: Deferred | None = None,
        detail: str | None = None,
    ) -> None:
        """Record ``firing`` SKIPPED (its record says ``detail`` when given, else the
        reason); a deferred firing's is forgotten once recorded (or found recorded), and read
        again when the write fails (it holds no watermark)."""
        try:
            written = self.claims.record_skipped(
                firing,
                now=self.clock.now(),
                reason=detail or str(reason),
                origin=self.settings.origin,
            )
        except StoreError as exc:
            tally.add("errors")
            if deferred is None:
                tally.hold(firing.scheduled)
            log.error(
                "Job %s - firing %s could not be recorded SKIPPED: %s",
                job.name,
                firing.id,
                exc,
                extra=log_keys(job.name, firing.id),
            )
            return
        if deferred is not None:
            tally.answer(deferred)
        if not written:
            return  # it has a record already (a peer claimed or skipped it)
        tally.skip(str(reason))
        self.metrics.add(m.skipped(str(reason)))
        if reason == SkipReason.OVERLAP and detail is None:
            log.info(
                SKIPPED_OVERLAP,
                job.name,
                firing.id,
                extra=log_keys(job.name, firing.id),
            )
        else:
            log.info(
                SKIPPED,
                job.name,
                firing.id,
                detail or reason,
                extra=log_keys(job.name, firing.id),
            )

    def skip_range(self, skip_range: SkipRange, tally: Tally) -> None:
        job, firings, reason = skip_range.job, list(skip_range.firings), skip_range.reason
        # The range's record is keyed by its first firing. When that firing has a record of its
        # own (a tick that held the watermark behind it claimed it), the store writes nothing:
        # the range then starts at the next firing, or the rest would have no record at all.
        first = 0
        try:
            while first < len(firings):
                written = self.claims.record_skipped_range(
                    job.name,
                    firings[first],
                    firings[-1],
                    len(firings) - first,
                    now=self.clock.now(),
                    reason=str(reason),
                    origin=self.settings.origin,
                )
                if written is not False:  # None: a store that cannot tell
                    break
                first += 1
        except StoreError as exc:
            tally.add("errors")
            tally.hold(firings[first])
            log.error(
                "Job %s - %d missed firings could not be recorded SKIPPED: %s",
                job.name,
                len(firings) - first,
                exc,
                extra=log_keys(job.name),
            )
            return
        if first == len(firings):
            return  # every one of them has a record already
        firings = firings[first:]
        tally.skip(str(reason), len(firings))
        self.metrics.add(m.skipped(str(reason)), len(firings))
        log.info(
            SKIPPED_RANGE,
            job.name,
            len(firings),
            iso_seconds(firings[0]),
            iso_seconds(firings[-1]),
            reason,
            extra=log_keys(job.name),
        )
