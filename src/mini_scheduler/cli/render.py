"""How the commands write for people: columns, counts, instants, spans; and read an instant."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from mini_scheduler.cron.zones import get_zone
from mini_scheduler.notes import run_note as run_note
from mini_scheduler.notes import utc_stamp as utc_stamp

if TYPE_CHECKING:
    from mini_scheduler.claims.records import RunRecord
    from mini_scheduler.cli.context import Context
    from mini_scheduler.fleet import Outcome


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def level_tag(level: str) -> str:
    return f"{level.upper():<7}"


def instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text!r} (e.g. 2026-11-30T14:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def utc_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_offset(local: datetime) -> str:
    text = local.strftime("%z")  # +0530
    return f"{text[:3]}:{text[3:5]}" if len(text) >= 5 else "+00:00"


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows aligned in columns two spaces apart (the last column is not padded)."""
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join(
            [*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]]
        ).rstrip()
        for row in rows
    ]


def wall_time(moment: datetime, zone: str) -> str:
    """A firing in its job's zone, with the zone's abbreviation: ``Mon 2026-11-30 09:00:00 EST``."""
    local = moment.astimezone(get_zone(zone))
    return f"{local.strftime('%a %Y-%m-%d %H:%M:%S')} {local.tzname()}"


def span(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds}s" if seconds else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def took(run: RunRecord) -> str:
    """How long a run took; 0 when its end is stamped before its start (clocks of two machines
    disagree), as the recorder logs it."""
    started = run.started_at or run.claimed_at
    if started is None or run.ended_at is None:
        return "-"
    elapsed = max(timedelta(0), run.ended_at - started)
    millis = int(elapsed.total_seconds() * 1000)
    return f"{millis} ms" if millis < 10_000 else span(elapsed)


def print_read(
    context: Context,
    command: str,
    shown: bool,
    rows: Sequence[Sequence[str]],
    outcomes: Sequence[Outcome],
) -> None:
    """What a read across regions found, as columns (under their heading ``rows[0]``, when it
    ``shown`` any), then each region that could not be read, on stderr."""
    if shown:
        for line in columns(rows):
            context.print(line)
    for o in outcomes:
        if not o.ok:
            context.warn(f"mini-scheduler {command}: {o.region} not read - {o.error}")
