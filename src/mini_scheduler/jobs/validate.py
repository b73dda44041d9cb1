"""One job entry of cron.yaml, checked key by key: a table of readers, one per key.

Every reason found in an entry is listed (all of them, not only the first), in the
order of the table, then the checks that need two keys (the parameters fit the target), then
the keys written twice. An entry with a reason is skipped; one without becomes a :class:`Job`.

* ``null`` for an optional key means the key is absent (``timezone:`` with no value is the
  default zone); ``null`` for a required key is "missing".
* A five-field statement is refused with its Quartz form; an unknown zone with the id it most
  likely meant; a statement Quartz accepts that selects no time from 1970 to 2999 in its zone
  (``0 0 0 30 2 ?``) loads with a warning that it never fires.
* An explicit ``!!timestamp``, ``!!binary``, ``!!set``, ``!!omap`` or ``!!pairs`` value in
  ``parameters`` is refused with a reason, as are NaN and infinities, and non-text keys at any
  depth (:mod:`mini_scheduler.jobs.limits`).
* ``retry`` is a mapping read key by key as a job entry is: each bad value is a reason of the
  entry, an unknown key inside it a warning (``retry.<key>``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final
from zoneinfo import ZoneInfo

from mini_scheduler.cron import CronExpression, CronSyntaxError, parse
from mini_scheduler.cron.zones import get_zone, is_fixed_offset, suggest_zone
from mini_scheduler.errors import UnknownTimeZoneError
from mini_scheduler.instants import iso_seconds, parse_instant
from mini_scheduler.jobs.caps import cap_problems, read_max_running, read_pool
from mini_scheduler.jobs.limits import reserved_note, split_reserved
from mini_scheduler.jobs.model import (
    DEFAULT_FLOW_TIMEOUT,
    DEFAULT_TIMEOUTS,
    MAX_PAUSE_AFTER_FAILURES,
    MAX_TIMEOUT,
    MISFIRE_POLICIES,
    OVERLAP_POLICIES,
    Job,
    Misfire,
    Overlap,
    Retry,
    Target,
)
from mini_scheduler.jobs.names import name_problem, parse_service, readable_name
from mini_scheduler.jobs.overlap import overlap_problems, read_max_buffered
from mini_scheduler.jobs.retry_key import read_retry
from mini_scheduler.jobs.spread import read_jitter, read_window, spread_conflict
from mini_scheduler.jobs.targets import (
    TargetRules,
    read_dead_letter,
    read_input,
    target_with_keys,
)
from mini_scheduler.jobs.text import describe, kind, quoted, words
from mini_scheduler.jobs.unknown import unknown_key
from mini_scheduler.jobs.yaml import Duplicate

__all__ = ["JOB_KEYS", "Entry", "Reading", "read_entry", "unknown_key"]

_INVALID_ENTRY: Final = "Invalid job entry#{n}{name} - check name, schedule and service: {reason}"
_ZONE_GUESSES: Final = 20
"""Unknown zones per file that get a spelling suggestion (each compares with ~600 ids): a file of
thousands of bad zones must not make loading it slow."""
_SEARCH_FROM: Final = datetime(1969, 12, 31, tzinfo=UTC)
"""A statement that has no firing after this in its zone never fires (firings start in 1970)."""
_REQUIRED: Final = ("name", "cron", "service")


@dataclass(slots=True)
class Entry:
    """What reading one entry found."""

    number: int
    name: str | None  # the entry's name when a message may show it (readable_name)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings reported whether it loads or not
    warnings: list[str] = field(default_factory=list)  # warnings reported when it loads
    job: Job | None = None

    @property
    def label(self) -> str:
        """How its warnings name the entry: ``Job <name>``, or ``Job entry#<n>``."""
        return f"Job {self.name or f'entry#{self.number}'}"

    def invalid(self) -> str:
        """The error line that skips the entry."""
        shown = "" if self.name is None else f" ({self.name})"
        return _INVALID_ENTRY.format(n=self.number, name=shown, reason="; ".join(self.reasons))


@dataclass(slots=True)
class Reading:
    """One load's setting and what it works out once: parsed statements, never-firing checks,
    zone guesses."""

    default_zone: str
    statements: dict[str, CronExpression | str] = field(default_factory=dict)
    silent: dict[tuple[str, str], bool] = field(default_factory=dict)
    zone_guesses: dict[str, str | None] = field(default_factory=dict)
    targets: TargetRules = field(default_factory=TargetRules)
    pools: Mapping[str, int] | None = None
    """The file's ``pools`` (None: not at hand, as for a runtime schedule made from the CLI)."""

    def parse(self, statement: str) -> CronExpression | str:
        """The parsed statement, or the reason it is refused (with its Quartz form when it is
        a Unix cron line)."""
        found = self.statements.get(statement)
        if found is None:
            try:
                found = parse(statement)
            except CronSyntaxError as exc:
                from mini_scheduler.cron.unix import unix_hint  # a refused statement's only

                hint = unix_hint(statement)
                found = str(exc) if hint is None else f"{exc} - {hint}"
            self.statements[statement] = found
        return found

    def never_fires(self, expression: CronExpression, zone: str, tz: ZoneInfo) -> bool:
        """Whether ``expression`` selects no time of ``tz`` in 1970-2999 (30 February)."""
        key = (expression.statement, zone)
        found = self.silent.get(key)
        if found is None:
            found = self.silent[key] = expression.next_after(_SEARCH_FROM, tz) is None
        return found

    def unknown_zone(self, zone: str) -> str:
        """The reason for an unknown zone, with the id it most likely meant: past
        :data:`_ZONE_GUESSES` different unknown zones, only a slip of case or a place's name."""
        if zone in self.zone_guesses:
            guess = self.zone_guesses[zone]
        else:
            fuzzy = len(self.zone_guesses) < _ZONE_GUESSES
            guess = self.zone_guesses[zone] = suggest_zone(zone, fuzzy=fuzzy)
        reason = f"unknown time zone {quoted(zone, 64)}"
        return reason if guess is None else f"{reason} - did you mean {guess}?"


# -- one reader per key: the value the job takes, or None with a reason -----------------------

Reader = Callable[[Any, Entry, Reading], Any]


def _name(value: object, entry: Entry, reading: Reading) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        entry.reasons.append(f"name must be text, not {describe(value)}: quote it")
        return None
    found = name_problem(value)
    if found:
        entry.reasons.append(found)
    return value


def _cron(value: object, entry: Entry, reading: Reading) -> CronExpression | None:
    if value is None:
        return None
    if not isinstance(value, str):
        entry.reasons.append(f"cron must be text, not {describe(value)}: quote it")
        return None
    parsed = reading.parse(value)
    if isinstance(parsed, CronExpression):
        return parsed
    entry.reasons.append(parsed)
    return None


def _service(value: object, entry: Entry, reading: Reading) -> Target | None:
    if value is None:
        return None
    if not isinstance(value, str):
        entry.reasons.append(f"service must be text, not {describe(value)}")
        return None
    parsed = parse_service(value)
    if isinstance(parsed, Target):
        return parsed
    entry.reasons.append(parsed)
    return None


def _timezone(value: object, entry: Entry, reading: Reading) -> ZoneInfo | None:
    zone = reading.default_zone if value is None else value
    if not isinstance(zone, str):
        entry.reasons.append(f"timezone must be text, not {describe(zone)}")
        return None
    try:
        tz = get_zone(zone)
    except UnknownTimeZoneError:
        entry.reasons.append(reading.unknown_zone(zone))
        return None
    if is_fixed_offset(zone):
        entry.warnings.append(
            f"{entry.label} time zone {zone} never follows daylight saving - name a region "
            "such as America/New_York"
        )
    return tz


def _parameters(value: object, entry: Entry, reading: Reading) -> dict[str, Any] | None:
    """The parameters the target receives; None when they are not a mapping."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        entry.reasons.append(f"parameters must be a mapping of keys to values, not {kind(value)}")
        return None
    text_keys: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(key, str):
            text_keys[key] = item
        else:
            entry.reasons.append(f"parameter key {describe(key)} is not text: quote it")
    kept, dropped = split_reserved(text_keys)
    entry.warnings.extend(reserved_note(entry.label, key) for key in dropped)
    return kept


def _description(value: object, entry: Entry, reading: Reading) -> str | None:
    if value is None or isinstance(value, str):
        return value
    entry.reasons.append(f"description must be text, not {describe(value)}")
    return None


def _ignored(value: object, entry: Entry, reading: Reading) -> None:
    """``resolver``: Mercury's, accepted and ignored."""
    return None


def _misfire(value: object, entry: Entry, reading: Reading) -> Misfire | None:
    misfire = "fire_now" if value is None else value
    if misfire not in MISFIRE_POLICIES:
        entry.reasons.append(f"misfire {describe(misfire)} is not one of {words(MISFIRE_POLICIES)}")
        return None
    return misfire


def _overlap(value: object, entry: Entry, reading: Reading) -> Overlap | None:
    overlap = "allow" if value is None else value
    if overlap not in OVERLAP_POLICIES:
        entry.reasons.append(f"overlap {describe(overlap)} is not one of {words(OVERLAP_POLICIES)}")
        return None
    return overlap


def _max_buffered(value: object, entry: Entry, reading: Reading) -> int | None:
    return read_max_buffered(value, entry.reasons)


def _max_running(value: object, entry: Entry, reading: Reading) -> int | None:
    return read_max_running(value, entry.reasons)


def _pool(value: object, entry: Entry, reading: Reading) -> str | None:
    return read_pool(value, entry.reasons, reading.pools)


def _timeout(value: object, entry: Entry, reading: Reading) -> int | None:
    """Seconds; None for the target's default (or a reason)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TIMEOUT:
        entry.reasons.append(
            f"timeout must be a whole number of seconds from 1 to {MAX_TIMEOUT}, not "
            f"{describe(value)}"
        )
        return None
    return value


def _retry(value: object, entry: Entry, reading: Reading) -> Retry | None:
    """The retry policy; None for no retry (or a reason)."""
    return read_retry(value, entry.label, entry.reasons, entry.notes)


def _instant(key: str) -> Reader:
    """The reader of ``start`` or ``end``: an ISO-8601 instant with its zone."""

    def read(value: object, entry: Entry, reading: Reading) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):  # a YAML timestamp given its tag, or a caller's value
            if value.tzinfo is None:
                entry.reasons.append(f"{key} {value.isoformat()} has no time zone: add Z")
                return None
            return value.astimezone(UTC)
        if not isinstance(value, str):
            entry.reasons.append(
                f"{key} must be an instant such as 2027-01-01T00:00:00Z, not {describe(value)}"
            )
            return None
        try:
            return parse_instant(value)
        except ValueError as exc:
            why = str(exc) if "zone" in str(exc) or "range" in str(exc) else "write it as "
            if why == "write it as ":
                why += "2027-01-01T00:00:00Z (ISO 8601, with its zone)"
            entry.reasons.append(f"{key} {quoted(value, 40)} is not an instant: {why}")
            return None

    return read


def _pause_after_failures(value: object, entry: Entry, reading: Reading) -> int | None:
    """Final failures in a row after which the job is paused; None for never (or a reason)."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_PAUSE_AFTER_FAILURES
    ):
        entry.reasons.append(
            f"pause_after_failures must be a whole number from 1 to {MAX_PAUSE_AFTER_FAILURES}, "
            f"not {describe(value)}"
        )
        return None
    return value


def _target_key(read: Callable[[object], tuple[Any, str | None]]) -> Reader:
    """A key another module reads (``input``, ``dead_letter``: :mod:`.targets`; ``jitter``,
    ``window``: :mod:`.spread`)."""

    def reader(value: object, entry: Entry, reading: Reading) -> Any:
        found, reason = read(value)
        if reason:
            entry.reasons.append(reason)
        return found

    return reader


def _enabled(value: object, entry: Entry, reading: Reading) -> bool | None:
    enabled = True if value is None else value
    if not isinstance(enabled, bool):
        entry.reasons.append(f"enabled must be true or false, not {describe(enabled)}")
        return None
    return enabled


FIELDS: Final[dict[str, Reader]] = {
    "name": _name,
    "cron": _cron,
    "service": _service,
    "timezone": _timezone,
    "parameters": _parameters,
    "description": _description,
    "resolver": _ignored,
    "misfire": _misfire,
    "overlap": _overlap,
    "max_buffered": _max_buffered,
    "max_running": _max_running,
    "pool": _pool,
    "timeout": _timeout,
    "retry": _retry,
    "pause_after_failures": _pause_after_failures,
    "enabled": _enabled,
    "start": _instant("start"),
    "end": _instant("end"),
    "input": _target_key(read_input),
    "dead_letter": _target_key(read_dead_letter),
    "ecs": _ignored,  # read with the service (target_with_keys)
    "http": _ignored,
    "jitter": _target_key(read_jitter),
    "window": _target_key(read_window),
}
"""Every key a job entry may hold, in the order its reasons are listed."""
JOB_KEYS: Final = tuple(FIELDS)


# -- the entry --------------------------------------------------------------------------------


def read_entry(
    number: int, raw: object, duplicates: Sequence[Duplicate], reading: Reading
) -> Entry:
    """Entry ``number`` of the ``jobs`` list, read: its job when nothing is wrong, else the
    reasons it is skipped."""
    if not isinstance(raw, dict):
        entry = Entry(number, None)
        entry.reasons.append(f"the entry is {describe(raw)}, not a mapping of job keys")
        return entry
    entry = Entry(number, readable_name(raw.get("name")))
    entry.notes.extend(unknown_key(entry.label, key, JOB_KEYS) for key in raw if key not in FIELDS)
    missing = [key for key in _REQUIRED if raw.get(key) is None]
    if missing:
        entry.reasons.append(f"missing {words(missing)}")
    values = {key: reader(raw.get(key), entry, reading) for key, reader in FIELDS.items()}
    target, parameters = values["service"], values["parameters"]
    if target is not None:
        target, found, warned = target_with_keys(
            target, raw, parameters, reading.targets, entry.label
        )
        values["service"] = target
        entry.reasons.extend(found)
        entry.notes.extend(warned)
    start, end = values["start"], values["end"]
    if start is not None and end is not None and end <= start:
        entry.reasons.append(f"end {iso_seconds(end)} is not after start {iso_seconds(start)}")
    entry.reasons.extend(overlap_problems(values, raw))
    entry.reasons.extend(cap_problems(values, raw))
    conflict = spread_conflict(values["jitter"] or 0, values["window"] or 0)
    if conflict:
        entry.reasons.append(conflict)
    entry.reasons.extend(
        f"key {duplicate.key} appears twice (lines {duplicate.first} and {duplicate.again})"
        for duplicate in duplicates
    )
    if not entry.reasons:
        entry.job = _job(entry, raw, values, reading)
    return entry


def _job(entry: Entry, raw: dict[Any, Any], values: dict[str, Any], reading: Reading) -> Job:
    """The job of an entry with no reason left: every required value is there."""
    zone = reading.default_zone if raw.get("timezone") is None else raw["timezone"]
    expression, tz, target = values["cron"], values["timezone"], values["service"]
    statement = raw["cron"]
    if reading.never_fires(expression, zone, tz):
        entry.warnings.append(
            f"{entry.label} never fires - {statement} selects no time in {zone} from 1970 to "
            "2999: check its day, month and year fields"
        )
    timeout = values["timeout"]
    if timeout is None:
        timeout = DEFAULT_TIMEOUTS.get(target.kind, DEFAULT_FLOW_TIMEOUT)
    return Job(
        name=values["name"],
        statement=statement,
        expression=expression,
        zone=zone,
        tz=tz,
        target=target,
        parameters=values["parameters"],
        description=values["description"],
        misfire=values["misfire"],
        overlap=values["overlap"],
        timeout=timeout,
        enabled=values["enabled"],
        entry=entry.number,
        retry=values["retry"],
        pause_after_failures=values["pause_after_failures"],
        start=values["start"],
        end=values["end"],
        input=values["input"],
        dead_letter=values["dead_letter"],
        max_buffered=values["max_buffered"],
        jitter=values["jitter"],
        window=values["window"],
        max_running=values["max_running"] or 1,
        pool=values["pool"],
        pool_limit=(reading.pools or {}).get(values["pool"] or "", 0),
    )
