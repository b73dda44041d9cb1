"""Concurrency caps, read: a job's ``max_running`` and ``pool``, and the file's ``pools``.

``max_running: N`` lets at most N runs of the job be open at once; ``pool: NAME`` counts the
job's open runs against ``pools: {NAME: N}`` at the top of cron.yaml, shared by every job that
names it. Either one is a cap the claim store keeps (a place per open run, taken in the claim's
conditional writes: :mod:`mini_scheduler.claims.places`), never a counter in a process. What a
firing does when a cap is reached is its ``overlap``: ``skip`` (recorded SKIPPED), ``buffer_one``
or ``buffer_all`` (it waits); so a cap goes with those three only, and is refused with
``allow`` (which caps nothing) and ``cancel_other`` (which stops the one open run).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from mini_scheduler.errors import CronFileError
from mini_scheduler.jobs.model import Job
from mini_scheduler.jobs.text import describe, quoted, words

__all__ = [
    "MAX_POOL",
    "MAX_RUNNING",
    "POOLS_KEY",
    "cap_detail",
    "cap_problems",
    "read_max_running",
    "read_pool",
    "read_pools",
]

MAX_RUNNING: Final = 100
"""The most ``max_running`` may say (the job's state item keeps a place per open run)."""
MAX_POOL: Final = 100
"""The largest pool (its item keeps a place per open run)."""
MAX_POOLS: Final = 100
"""How many pools a file may define."""
POOLS_KEY: Final = "pools"
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_CAPPING: Final = ("skip", "buffer_one", "buffer_all")
"""The policies a cap goes with: what a firing does when the cap is reached."""


def read_max_running(value: object, reasons: list[str]) -> int | None:
    """``max_running``: a whole number from 1 to :data:`MAX_RUNNING` (None: not set, or a
    reason added)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RUNNING:
        reasons.append(
            f"max_running must be a whole number from 1 to {MAX_RUNNING} (how many of the "
            f"job's runs may be open at once), not {describe(value)}"
        )
        return None
    return value


def read_pool(value: object, reasons: list[str], pools: Mapping[str, int] | None) -> str | None:
    """``pool``: the name of a pool the file defines (``pools``: None when the file is not
    at hand, as for a runtime schedule before it reaches a tick: any well-formed name)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        reasons.append(f"pool must be the name of a pool under {POOLS_KEY}, not {describe(value)}")
        return None
    if pools is not None and value not in pools:
        defined = f"the file defines {words(sorted(pools))}" if pools else "the file defines none"
        reasons.append(f"pool {quoted(value, 64)} is not defined under {POOLS_KEY} ({defined})")
        return None
    return value


def read_pools(data: Mapping[Any, Any], source: str) -> dict[str, int]:
    """The file's ``pools``: a mapping of names to sizes (1 to :data:`MAX_POOL`), or
    CronFileError naming what is wrong (a job's ``pool`` needs the whole file's pools)."""
    pools = data.get(POOLS_KEY)
    if pools is None:
        return {}
    if not isinstance(pools, dict):
        raise CronFileError(
            f"Cron file {source}: {POOLS_KEY} must map pool names to their sizes "
            f"(pools: {{exports: 3}}), not {describe(pools)}"
        )
    if len(pools) > MAX_POOLS:
        raise CronFileError(
            f"Cron file {source}: {POOLS_KEY} defines {len(pools)} pools, more than {MAX_POOLS}"
        )
    for name, size in pools.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise CronFileError(
                f"Cron file {source}: pool name {describe(name)} must be 1 to 64 letters, "
                "digits, '.', '_' or '-', starting with a letter or digit"
            )
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_POOL:
            raise CronFileError(
                f"Cron file {source}: pool {name} must have a size from 1 to {MAX_POOL} (how "
                f"many runs of its jobs may be open at once), not {describe(size)}"
            )
    return dict(pools)


def cap_problems(values: Mapping[str, Any], raw: Mapping[Any, Any]) -> list[str]:
    """What is wrong with the entry's caps beside its ``overlap`` (read as ``values`` holds
    it): a cap needs a policy that says what a firing past it does."""
    overlap = values.get("overlap")
    if overlap is None or overlap in _CAPPING:
        return []
    why = (
        "allow caps nothing"
        if overlap == "allow"
        else "cancel_other stops the one open run, and a cap leaves several"
    )
    return [
        f"{key} goes with overlap skip, buffer_one or buffer_all (what a firing does when "
        f"the cap is reached), not with overlap {overlap}: {why}"
        for key in ("max_running", "pool")
        if raw.get(key) is not None
    ]


def cap_detail(job: Job) -> str | None:
    """What the record of a firing skipped at its job's caps says (None for a job with one run
    at a time and no pool: the plain ``overlap`` skip)."""
    if not job.places:
        return None
    caps = ["one run at a time"] if job.exclusive else []
    if job.max_running > 1:
        caps.append(f"max_running {job.max_running}")
    if job.pool is not None:
        caps.append(f"pool {job.pool} of {job.pool_limit}")
    return f"as many runs are open as its caps allow: {', '.join(caps)}; overlap {job.overlap}"
