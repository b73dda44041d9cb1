"""cron.yaml read as a whole: the file-level checks and settings, then every entry.

A file that cannot be read as a whole (empty, not YAML, not a mapping with a ``jobs`` list, a
bad file-level setting, too large, too deep, an alias bomb) raises :class:`CronFileError`
naming the source; nothing is half-loaded. A bad entry is skipped and reported, and the others
load. A key written twice in one mapping is refused: in a job entry (its parameters included)
the entry is invalid; at the top level of the file the whole file is; elsewhere it is a warning.
Two entries of one name are both skipped.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final, NamedTuple

from yaml.nodes import Node

from mini_scheduler.cron.zones import get_zone, suggest_zone
from mini_scheduler.errors import CronFileError, UnknownTimeZoneError
from mini_scheduler.jobs.caps import POOLS_KEY, read_pools
from mini_scheduler.jobs.model import (
    DEFAULT_MISFIRE_GRACE,
    DEFAULT_MISFIRE_MAX,
    DEFAULT_TIMEZONE,
    MAX_MISFIRE_GRACE,
    MAX_MISFIRE_MAX,
    MAX_NAME_LENGTH,
    CronFile,
    Job,
    Problem,
)
from mini_scheduler.jobs.targets import TargetRules
from mini_scheduler.jobs.text import describe, quoted, words
from mini_scheduler.jobs.validate import Reading, read_entry, unknown_key
from mini_scheduler.jobs.yaml import MAX_FILE_BYTES, Duplicate, compose, decode, entry_nodes

__all__ = ["FILE_KEYS", "load"]

FILE_KEYS: Final = (
    "jobs",
    "deferred.start",
    "leader.election",
    "misfire.grace",
    "misfire.max",
    POOLS_KEY,
)


def load(
    text: str | bytes,
    *,
    source: str = "<string>",
    default_timezone: str = DEFAULT_TIMEZONE,
    targets: TargetRules | None = None,
) -> CronFile:
    """Read a cron file. A whole-file problem raises :class:`CronFileError`; a bad entry is
    skipped and reported in :attr:`CronFile.problems`. ``targets``: the kinds of target this
    deployment may start (None: every kind)."""
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if len(raw) > MAX_FILE_BYTES:
        raise CronFileError(
            f"Cron file {source} is {len(raw)} bytes, more than the {MAX_FILE_BYTES} allowed"
        )
    document = text if isinstance(text, str) else decode(raw, source)
    if not document.strip():
        raise CronFileError(f"Cron file {source} is empty: it needs a jobs list")
    _check_default_zone(default_timezone, source)
    root, data, duplicates = compose(document, source)
    if root is None:
        raise CronFileError(f"Cron file {source} is empty: it needs a jobs list")
    jobs = _jobs_list(root, data, duplicates, source)
    settings = _settings(data, source)
    problems = _file_problems(data, settings.leader_election)
    by_entry = _duplicates_by_entry(root, duplicates, problems)
    pools = read_pools(data, source)
    reading = Reading(default_timezone, targets=targets or TargetRules(), pools=pools)
    loaded = _read_entries(jobs, by_entry, reading, problems)
    return CronFile(
        jobs=tuple(loaded),
        source=source,
        deferred_start=settings.deferred_start,
        leader_election=settings.leader_election,
        misfire_grace=settings.misfire_grace,
        misfire_max=settings.misfire_max,
        problems=tuple(problems),
        version=hashlib.sha256(raw).hexdigest(),
        entries=len(jobs),
        pools=pools,
    )


def _check_default_zone(zone: str, source: str) -> None:
    try:
        get_zone(zone)
    except UnknownTimeZoneError:
        guess = suggest_zone(zone)
        raise CronFileError(
            f"Cron file {source} cannot be read in the default time zone "
            f"{quoted(zone, 64)}: it is unknown (DEFAULT_TIMEZONE)"
            + ("" if guess is None else f" - did you mean {guess}?")
        ) from None


def _jobs_list(root: Node, data: Any, duplicates: list[Duplicate], source: str) -> list[Any]:
    """The file's ``jobs`` list, or CronFileError when the file is not a mapping that holds
    one and no top-level key twice."""
    if not isinstance(data, dict):
        raise CronFileError(
            f"Cron file {source} must be a mapping with a jobs list, not {describe(data)}"
        )
    top = [d for d in duplicates if d.mapping == root.start_mark.index]
    if top:
        first = top[0]
        raise CronFileError(
            f"Cron file {source}: key {first.key} appears twice (lines {first.first} and "
            f"{first.again})"
        )
    if "jobs" not in data:
        raise CronFileError(f"Cron file {source} has no jobs key: list the jobs under jobs:")
    jobs = data["jobs"]
    if not isinstance(jobs, list):
        hint = " (write jobs: [] for none)" if jobs is None else ""
        raise CronFileError(
            f"Cron file {source}: jobs must be a list of job entries, not {describe(jobs)}{hint}"
        )
    return jobs


_SECONDS: Final = " of seconds"


class _Settings(NamedTuple):
    deferred_start: bool
    leader_election: bool
    misfire_grace: int
    misfire_max: int


def _settings(data: dict[Any, Any], source: str) -> _Settings:
    """The file-level settings, or CronFileError for a bad one."""
    return _Settings(
        deferred_start=_setting_bool(data, "deferred.start", source),
        leader_election=_setting_bool(data, "leader.election", source),
        misfire_grace=_setting_int(
            data,
            "misfire.grace",
            source,
            DEFAULT_MISFIRE_GRACE,
            0,
            MAX_MISFIRE_GRACE,
            " of seconds",
        ),
        misfire_max=_setting_int(
            data, "misfire.max", source, DEFAULT_MISFIRE_MAX, 1, MAX_MISFIRE_MAX, ""
        ),
    )


def _setting_bool(data: dict[Any, Any], key: str, source: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise CronFileError(
            f"Cron file {source}: {key} must be true or false, not {describe(value)}"
        )
    return value


def _setting_int(
    data: dict[Any, Any], key: str, source: str, default: int, low: int, high: int, what: str
) -> int:
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CronFileError(
            f"Cron file {source}: {key} must be a whole number{what} from {low} to {high}, "
            f"not {describe(value)}"
        )
    return value


def _file_problems(data: dict[Any, Any], leader_election: bool) -> list[Problem]:
    """The file's own warnings: unknown keys, and leader.election."""
    problems = [
        Problem("warning", unknown_key("Cron file", key, FILE_KEYS))
        for key in data
        if key not in FILE_KEYS
    ]
    if leader_election:
        problems.append(
            Problem(
                "warning",
                "leader.election is not supported and is ignored - the claim in the state table "
                "replaces it",
            )
        )
    return problems


def _duplicates_by_entry(
    root: Node, duplicates: list[Duplicate], problems: list[Problem]
) -> dict[int, list[Duplicate]]:
    """The keys written twice in each entry (by number); one written twice elsewhere below the
    top level is a warning added to ``problems``."""
    spans = [(node.start_mark.index, node.end_mark.index) for node in entry_nodes(root)]
    by_entry: dict[int, list[Duplicate]] = {}
    for duplicate in duplicates:
        if duplicate.mapping == root.start_mark.index:
            continue
        number = next(
            (
                i
                for i, (start, end) in enumerate(spans, start=1)
                if start <= duplicate.mapping < end
            ),
            None,
        )
        if number is None:
            problems.append(
                Problem(
                    "warning",
                    f"Cron file key {duplicate.key} appears twice (lines {duplicate.first} and "
                    f"{duplicate.again}) - the last value is used",
                )
            )
        else:
            by_entry.setdefault(number, []).append(duplicate)
    return by_entry


def _read_entries(
    jobs: list[Any],
    by_entry: dict[int, list[Duplicate]],
    reading: Reading,
    problems: list[Problem],
) -> list[Job]:
    """The jobs that load; every entry's notes, warnings and error go to ``problems``."""
    names: dict[str, list[int]] = {}
    for number, raw_entry in enumerate(jobs, start=1):
        if isinstance(raw_entry, dict) and isinstance(raw_entry.get("name"), str):
            names.setdefault(raw_entry["name"], []).append(number)
    loaded: list[Job] = []
    for number, raw_entry in enumerate(jobs, start=1):
        entry = read_entry(number, raw_entry, by_entry.get(number, ()), reading)
        name = raw_entry.get("name") if isinstance(raw_entry, dict) else None
        sharing = names.get(name, []) if isinstance(name, str) else []
        if isinstance(name, str) and len(sharing) > 1:
            entry.reasons.append(
                f"name {quoted(name, MAX_NAME_LENGTH)} is used by entries "
                f"{words([f'#{n}' for n in sharing])} - every entry with this name is skipped"
            )
            entry.job = None
        problems.extend(Problem("warning", note, number) for note in entry.notes)
        if entry.reasons:
            problems.append(Problem("error", entry.invalid(), number))
            continue
        problems.extend(Problem("warning", warning, number) for warning in entry.warnings)
        assert entry.job is not None  # nosec B101 # type narrowing: no reason means a job
        loaded.append(entry.job)
    return loaded
