"""A run in a few words, as the CLI's history and the console's say it: one place, so that both
say the same."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mini_scheduler.claims.records import RunRecord


def utc_stamp(moment: datetime | None) -> str:
    """``2026-11-30 14:00:00Z``, or ``-`` for none."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if moment else "-"


def run_note(run: RunRecord) -> str:
    """What else a run was, in a few words: manual, a rerun, an attempt, a backfill, a skipped
    range, its reason or error."""
    parts: list[str] = []
    if run.manual:
        parts.append(f"manual run by {run.operator}" if run.operator else "manual run")
    if run.reruns:
        parts.append(f"rerun of {run.reruns}")
    if run.operator_reason:
        parts.append(f"reason: {run.operator_reason}")
    if run.attempt > 1:
        parts.append(f"attempt {run.attempt}")
    if run.backfill:
        replaced = (run.replaced_skip or {}).get("reason")
        parts.append(f"backfill (was SKIPPED: {replaced})" if replaced else "backfill")
    if run.skipped_count is not None and run.skipped_until:
        parts.append(f"{run.skipped_count} firings to {run.skipped_until}")
    if run.reason:
        parts.append(run.reason)
    if run.timed_out_at is not None and not run.swept:
        parts.append(f"ended after it was marked TIMED_OUT at {utc_stamp(run.timed_out_at)}")
    if run.redrives:
        earlier = ", ".join(str(end.status) for end in run.earlier_ends)
        parts.append(f"redriven {run.redrives}x" + (f" after {earlier}" if earlier else ""))
    if run.error:
        parts.append(run.error.splitlines()[0][:200] if run.error.strip() else run.error)
    return "; ".join(parts) or "-"
