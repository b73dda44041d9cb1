"""What an operator does across regions, whoever shows it (the CLI, the console): one region's
outcome and an action done region by region (a region that fails reported beside the others);
the refusal of a name that is neither a job nor a runtime schedule; the names a deployment knows
and the verdict on who is active; which regions a failover must write, and the check of each
afterwards; a job's history (and the audit trail) merged across regions, newest first.

Decided here once, rendered by each caller; the console imports nothing from ``cli/``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from mini_scheduler.environment.active import same_environment
from mini_scheduler.environment.regions import Held, active_regions, is_known, verdict
from mini_scheduler.errors import SchedulerError, describe_aws_error

if TYPE_CHECKING:
    from mini_scheduler.claims.records import RunRecord

T = TypeVar("T")


@dataclass(slots=True)
class Outcome:
    """One region's result in an action done region by region."""

    region: str
    ok: bool
    fields: dict[str, Any]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"region": self.region, "ok": self.ok, **self.fields}
        if self.error is not None:
            out["error"] = self.error
        return out


def each_region(
    regions: Sequence[str],
    act: Callable[[str], dict[str, Any]],
    *,
    stops: Callable[[SchedulerError], bool] = lambda exc: False,
) -> list[Outcome]:
    """Do ``act`` in every region in turn; a failure is reported, and the next region done. An
    error that ``stops`` says concerns every region (a usage error) is raised at once."""
    from botocore.exceptions import BotoCoreError, ClientError

    outcomes: list[Outcome] = []
    for region in regions:
        try:
            outcomes.append(Outcome(region, True, act(region)))
        except SchedulerError as exc:
            if stops(exc):
                raise
            outcomes.append(Outcome(region, False, {}, str(exc)))
        except (BotoCoreError, ClientError) as exc:
            outcomes.append(Outcome(region, False, {}, describe_aws_error(exc)))
    return outcomes


# -- pause ---------------------------------------------------------------------------------


def holders(outcomes: Sequence[Outcome]) -> list[str] | None:
    """The regions a runtime schedule's pause (or its deletion) must reach, from each region's
    ``holds``: those whose store holds it, and those that could not be read (acted on, so that
    their failure is reported, never taken for "nothing to do"). None when no region read holds
    it: the name is no runtime schedule, as far as can be told."""
    if not any(o.ok and o.fields["holds"] for o in outcomes):
        return None
    return [o.region for o in outcomes if not o.ok or o.fields["holds"]]


def no_such_job(name: str, source: str, regions: Sequence[str], besides: str = "") -> str:
    """The refusal of ``name``, neither a job of the cron file ``source`` nor a runtime schedule
    of ``regions`` (``besides``: what else was looked at, e.g. a region not read), in the CLI's
    words and the console's alike."""
    return (
        f"no cron.yaml job or runtime schedule {name}: not in {source}, nor a runtime schedule "
        f"of {', '.join(regions)}{besides} (mini-scheduler jobs lists the cron file's jobs, "
        "mini-scheduler schedule list the runtime schedules)"
    )


# -- who is active -------------------------------------------------------------------------


def known_names(*lists: Iterable[str | None]) -> tuple[str, ...]:
    """The environment names of ``lists``, in order, each once (names compare without regard
    to case, as the ticker compares them)."""
    known: list[str] = []
    for name in itertools.chain(*lists):
        if name and not any(same_environment(name, k) for k in known):
            known.append(name)
    return tuple(known)


@dataclass(frozen=True, slots=True)
class Judgement:
    """The regions as read (or written and read back), and what is wrong with who is active."""

    held: list[Held]
    problem: str | None

    @property
    def active_regions(self) -> list[str]:
        return [h.region for h in active_regions(self.held)]

    @property
    def agree(self) -> bool:
        """Whether the regions read hold one value."""
        return len({str(h.active).casefold() for h in self.held if h.active is not None}) <= 1


def judge(
    outcomes: Sequence[Outcome], environments: Mapping[str, str | None], known: tuple[str, ...]
) -> Judgement:
    """The verdict on ``outcomes`` (each with the ``active`` value its region holds), each
    region's own environment name in ``environments`` (missing or None: not known)."""
    held = [
        Held(o.region, environments.get(o.region), o.fields["active"] if o.ok else None)
        for o in outcomes
    ]
    return Judgement(held, verdict(held, known))


# -- failover ------------------------------------------------------------------------------


def spelled(name: str, stacks: Iterable[str | None]) -> str:
    """``name`` as the stack whose name it is spells it (its EnvironmentName): names are
    compared without regard to case, as the ticker compares them. A name no stack given has
    stays as typed."""
    return next((k for k in stacks if k and same_environment(name, k)), name)


@dataclass(frozen=True, slots=True)
class Gap:
    """A failover to ``target`` in ``regions`` that leaves a stack's region out: a region left
    out keeps its value, and may stay active beside the one the failover makes active.
    ``missing``: the known names no region given has (empty: some region's name is not known,
    so which are left out cannot be told); ``active``: the regions ``target`` makes active."""

    target: str
    regions: tuple[str, ...]
    known: tuple[str, ...]
    missing: tuple[str, ...] = ()
    active: tuple[str, ...] = ()


def left_out(
    regions: Sequence[str],
    environments: Mapping[str, str | None],
    known: tuple[str, ...],
    target: str,
) -> Gap | None:
    """Why writing ``target`` in ``regions`` alone could leave two regions active, or None.
    Each known name is a stack's, in a region of its own: one rule for every failover, from
    the CLI or the console."""
    if len(regions) >= len(known):
        return None  # as many regions as stacks (two alike are the verdict's to say)
    names = [environments.get(r) for r in regions]
    given = tuple(n for n in names if n)
    if len(given) < len(regions):
        return Gap(target, tuple(regions), known)
    missing = tuple(k for k in known if not is_known(k, given))
    if not missing or not is_known(target, given):
        return None  # every stack's region is given, or none given becomes active
    active = tuple(
        r for r, n in zip(regions, names, strict=True) if n and same_environment(target, n)
    )
    return Gap(target, tuple(regions), known, missing, active)


def check_written(store: str, after: str | None, target: str) -> str:
    """The value a region holds, read back after writing ``target`` in its store: the verdict
    is on what the regions hold now, not on what was sent."""
    if after is None or not same_environment(after, target):
        raise SchedulerError(f"{store} holds {after!r} after the write, not {target}")
    return after


# -- history -------------------------------------------------------------------------------


class Placed(NamedTuple):
    """A run and the region whose store holds it."""

    region: str
    run: RunRecord


def newest_first(runs: Iterable[Placed]) -> list[Placed]:
    """Runs of several regions (and jobs) merged, newest first: by their history's sort key
    (time first, a firing's attempts together, the latest first), then job, then region."""
    return merged([runs], lambda p: (_sort_key(p.run), p.run.job, p.region))


def merged(parts: Iterable[Iterable[T]], key: Callable[[T], Any]) -> list[T]:
    """What several regions read (runs, audit records), merged newest first by ``key``."""
    return sorted(itertools.chain.from_iterable(parts), key=key, reverse=True)


def page(merged: Sequence[Placed], limit: int) -> tuple[list[Placed], str | None]:
    """The first ``limit`` of ``merged``, and the cursor of the page after it (None: none). A
    firing recorded in two regions has one key: it is never split across pages."""
    shown = list(merged[:limit])
    while (
        shown
        and len(shown) < len(merged)
        and _sort_key(merged[len(shown)].run) == (_sort_key(shown[-1].run))
    ):
        shown.append(merged[len(shown)])
    more = len(merged) > len(shown)
    return shown, (_sort_key(shown[-1].run) if more and shown else None)


def _sort_key(run: RunRecord) -> str:
    try:
        return run.sort_key
    except ValueError:  # a firing id no tick wrote: by its scheduled time alone
        return run.scheduled_time
