"""Two cron files compared job by job: what deploying ``new`` where ``old`` runs adds, removes
and changes, field by field under cron.yaml's own keys, and what it does to the firings: each
changed schedule's next firings before and after, and the firings of the next 24 hours that
appear or disappear (a job's firing is its name and its instant).

Pure: the caller gives the instant the comparison starts from (the CLI's clock). A mapping
(``parameters``, ``input``, ``ecs``, ``http``) is compared key by key and said by its keys
(``region``, ``report.format``), never by its values: a parameter may be a secret that a CI log
should not hold. A disabled job has no firing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from mini_scheduler.instants import iso_seconds
from mini_scheduler.jobs.model import CronFile, Job
from mini_scheduler.jobs.spread import planned_after

NEXT_COUNT: Final = 3
"""How many next firings a changed schedule shows, before and after."""
WINDOW: Final = timedelta(hours=24)
"""How far ahead the firings that appear or disappear are counted."""
MAPPINGS: Final = frozenset({"parameters", "input", "ecs", "http"})
"""The keys compared by their own keys, never shown by value."""
TIMING: Final = frozenset({"cron", "timezone", "start", "end", "enabled", "jitter", "window"})
"""The keys whose change moves a job's firings (``jitter`` and ``window``: when each starts)."""
_OPTIONS: Final[Mapping[str, str]] = {"ecs": "ecs", "https": "http"}
"""The key of a target's own mapping, by its kind."""

Action = Literal["add", "change", "remove"]


@dataclass(frozen=True, slots=True)
class Change:
    """One key whose value differs. A scalar's ``before`` and ``after`` (None: not set); a
    mapping's keys, by path, ``added``, ``removed`` and ``changed`` (its values are not kept)."""

    key: str
    before: Any = None
    after: Any = None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    @property
    def mapping(self) -> bool:
        return self.key in MAPPINGS

    def to_json(self) -> dict[str, Any]:
        if self.mapping:
            return {
                "field": self.key,
                "added": list(self.added),
                "removed": list(self.removed),
                "changed": list(self.changed),
            }
        return {"field": self.key, "before": self.before, "after": self.after}


@dataclass(frozen=True, slots=True)
class JobChange:
    """A job added, changed or removed: ``job`` is the new file's (the old file's when removed);
    ``before`` and ``after``, the next firings of a job whose timing changed."""

    action: Action
    job: Job
    fields: tuple[Change, ...] = ()
    before: tuple[datetime, ...] = ()
    after: tuple[datetime, ...] = ()
    appear: int = 0
    disappear: int = 0

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def timing(self) -> bool:
        """Whether its firings move: a key of :data:`TIMING` changed."""
        return any(change.key in TIMING for change in self.fields)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "job": self.name,
            "action": self.action,
            "service": self.job.service,
            "schedule": self.job.schedule,
            "enabled": self.job.enabled,
            "fields": [change.to_json() for change in self.fields],
        }
        if self.timing:
            out["nextFiringsBefore"] = [iso_seconds(at) for at in self.before]
            out["nextFiringsAfter"] = [iso_seconds(at) for at in self.after]
        out["firings24h"] = {"appear": self.appear, "disappear": self.disappear}
        return out


@dataclass(frozen=True, slots=True)
class Plan:
    """What deploying a cron file changes: its jobs in its order, then the jobs it removes in
    the old file's order; the file's own settings that change; how many jobs stay as they are."""

    jobs: tuple[JobChange, ...]
    settings: tuple[Change, ...]
    unchanged: int
    start: datetime

    def count(self, action: Action) -> int:
        return sum(1 for job in self.jobs if job.action == action)

    @property
    def changes(self) -> bool:
        return bool(self.jobs or self.settings)

    @property
    def appear(self) -> int:
        return sum(job.appear for job in self.jobs)

    @property
    def disappear(self) -> int:
        return sum(job.disappear for job in self.jobs)

    def added_names(self) -> list[str]:
        return [job.name for job in self.jobs if job.action == "add"]

    def to_json(self) -> dict[str, Any]:
        return {
            "add": self.count("add"),
            "change": self.count("change"),
            "remove": self.count("remove"),
            "unchanged": self.unchanged,
            "jobs": [job.to_json() for job in self.jobs],
            "settings": [change.to_json() for change in self.settings],
            "firings24h": {
                "from": iso_seconds(self.start),
                "appear": self.appear,
                "disappear": self.disappear,
            },
        }


def compare(old: CronFile, new: CronFile, start: datetime) -> Plan:
    """What deploying ``new`` where ``old`` runs changes, from ``start`` (an aware instant)."""
    jobs: list[JobChange] = []
    unchanged = 0
    for job in new.jobs:
        before = old.job(job.name)
        if before is None:
            jobs.append(_added(job, start))
            continue
        fields = changes(before, job)
        if fields:
            jobs.append(_changed(before, job, fields, start))
        else:
            unchanged += 1
    jobs.extend(_removed(job, start) for job in old.jobs if new.job(job.name) is None)
    return Plan(tuple(jobs), setting_changes(old, new), unchanged, start)


def values(job: Job) -> dict[str, Any]:
    """A job's keys as cron.yaml names them, each with its value as loaded (None: not set)."""
    found: dict[str, Any] = {
        "cron": job.statement,
        "timezone": job.zone,
        "service": job.service,
        "parameters": dict(job.parameters),
        "input": dict(job.input) if job.input is not None else None,
        "description": job.description,
        "misfire": job.misfire,
        "overlap": job.overlap,
        "max_buffered": job.max_buffered,
        "max_running": job.max_running if job.max_running > 1 else None,
        "pool": job.pool,
        "timeout": job.timeout,
        "retry": job.retry.as_record() if job.retry is not None else None,
        "pause_after_failures": job.pause_after_failures,
        "dead_letter": job.dead_letter.service if job.dead_letter is not None else None,
        "enabled": job.enabled,
        "start": iso_seconds(job.start) if job.start is not None else None,
        "end": iso_seconds(job.end) if job.end is not None else None,
        "jitter": job.jitter or None,
        "window": job.window or None,
    }
    key = _OPTIONS.get(job.target.kind)
    if key is not None:
        found[key] = dict(job.target.options)
    return found


def changes(old: Job, new: Job) -> tuple[Change, ...]:
    """The keys whose values differ, in :func:`values`' order (a target's mapping last)."""
    before, after = values(old), values(new)
    found: list[Change] = []
    for key in dict.fromkeys([*before, *after]):
        was, now = before.get(key), after.get(key)
        if _same(was, now):
            continue
        if key in MAPPINGS:
            added, removed, changed = _paths(was or {}, now or {})
            found.append(Change(key, added=added, removed=removed, changed=changed))
        else:
            found.append(Change(key, was, now))
    return tuple(found)


def setting_changes(old: CronFile, new: CronFile) -> tuple[Change, ...]:
    """The file's own settings that differ, under their keys in cron.yaml."""
    pairs = (
        ("deferred.start", old.deferred_start, new.deferred_start),
        ("misfire.grace", old.misfire_grace, new.misfire_grace),
        ("misfire.max", old.misfire_max, new.misfire_max),
        *(
            (f"pools.{name}", old.pools.get(name), new.pools.get(name))
            for name in sorted({*old.pools, *new.pools})
        ),
    )
    return tuple(Change(key, was, now) for key, was, now in pairs if was != now)


def next_firings(job: Job, after: datetime, count: int = NEXT_COUNT) -> tuple[datetime, ...]:
    """The job's next ``count`` firings strictly after ``after`` (none when it is disabled); a
    job with ``jitter`` or ``window``, when each starts (:mod:`.spread`)."""
    if job.enabled and job.spread_seconds:
        return tuple(start for _, start in planned_after(job, after, count))
    found: list[datetime] = []
    moment: datetime | None = after
    while job.enabled and moment is not None and len(found) < count:
        moment = job.next_after(moment)
        if moment is not None:
            found.append(moment)
    return tuple(found)


def _window(job: Job, start: datetime) -> Iterator[datetime]:
    """The job's firings in the :data:`WINDOW` from ``start`` (none when it is disabled)."""
    return job.firings(start, start + WINDOW) if job.enabled else iter(())


def _added(job: Job, start: datetime) -> JobChange:
    return JobChange("add", job, appear=sum(1 for _ in _window(job, start)))


def _removed(job: Job, start: datetime) -> JobChange:
    return JobChange("remove", job, disappear=sum(1 for _ in _window(job, start)))


def _changed(old: Job, new: Job, fields: tuple[Change, ...], start: datetime) -> JobChange:
    change = JobChange("change", new, fields)
    if not change.timing:
        return change
    was, now = set(_window(old, start)), set(_window(new, start))
    return JobChange(
        "change",
        new,
        fields,
        before=next_firings(old, start),
        after=next_firings(new, start),
        appear=len(now - was),
        disappear=len(was - now),
    )


def _paths(
    old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = ""
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The keys of two mappings, by dotted path, that were added, removed and changed (a
    mapping within both is compared key by key; any other value as a whole)."""
    added: list[str] = []
    removed: list[str] = []
    changed: list[str] = []
    for key in dict.fromkeys([*old, *new]):
        path = f"{prefix}{key}"
        if key not in old:
            added.append(path)
        elif key not in new:
            removed.append(path)
        elif isinstance(old[key], Mapping) and isinstance(new[key], Mapping):
            more = _paths(old[key], new[key], f"{path}.")
            added += more[0]
            removed += more[1]
            changed += more[2]
        elif not _same(old[key], new[key]):
            changed.append(path)
    return tuple(added), tuple(removed), tuple(changed)


def _same(one: Any, other: Any) -> bool:
    """Whether two loaded values are the same value as a target receives it: ``1`` is not
    ``true`` nor ``1.0``, and a mapping's order does not count."""
    return _canonical(one) == _canonical(other)


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except TypeError:  # keys of several types cannot be sorted
        return repr(value)
