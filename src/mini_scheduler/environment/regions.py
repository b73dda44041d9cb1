"""Which of several regions is active: each region holds an active environment's name, and the
region whose own name it is runs the jobs. Pure: the CLI's ``status`` and ``failover`` and the
console read the regions' stores and ask here what the values mean."""

from __future__ import annotations

from dataclasses import dataclass

from mini_scheduler.environment.active import same_environment


def is_known(name: str, known: tuple[str, ...]) -> bool:
    return any(same_environment(name, k) for k in known)


@dataclass(frozen=True, slots=True)
class Held:
    """One region as a verdict sees it: its environment (None: not known) and the active
    environment it holds (None: not read)."""

    region: str
    environment: str | None
    active: str | None


def active_regions(held: list[Held]) -> list[Held]:
    """The regions that hold their own name: the active ones."""
    return [h for h in held if h.environment and same_environment(h.active, h.environment)]


def verdict(held: list[Held], known: tuple[str, ...]) -> str | None:
    """What is wrong with who is active, or None: more than one region active; or none, when
    that is certain; or the regions read holding different values (whatever their names: some
    tick may see both active, or neither). Every command that judges the regions asks here."""
    return _more_than_one(held) or _none_active(held, known) or _disagreement(held)


def _disagreement(held: list[Held]) -> str | None:
    read = [h for h in held if h.active is not None]
    if len({str(h.active).casefold() for h in read}) < 2:
        return None
    return (
        "The regions disagree on the active environment: "
        + ", ".join(f"{h.region} holds {h.active}" for h in read)
        + ". Finish the failover: mini-scheduler failover --to NAME --regions "
        + ",".join(h.region for h in held)
    )


def _more_than_one(held: list[Held]) -> str | None:
    active = active_regions(held)
    if len(active) > 1:
        listed = ", ".join(f"{h.region} ({h.environment})" for h in active)
        return (
            f"{len(active)} regions are active: {listed} - each may run the same firing. "
            "Give each stack its own EnvironmentName"
        )
    return None


def _none_active(held: list[Held], known: tuple[str, ...]) -> str | None:
    """No region active, when that is certain: every region read, and each value names one of
    these regions or no stack at all (a known name of a region not given may be active
    there)."""
    active = active_regions(held)
    if active or any(h.active is None for h in held):
        return None
    names = [h.environment for h in held if h.environment]
    values = {str(h.active).casefold(): str(h.active) for h in held}
    unknown = [v for v in values.values() if not is_known(v, known)]
    if not all(v in unknown or is_known(v, tuple(names)) for v in values.values()):
        return None  # a known name of a region not given: it may be active there
    if unknown:
        why = (
            f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a known "
            f"environment (known: {', '.join(known)}), so no stack has "
            f"{'it' if len(unknown) == 1 else 'them'}"
        )
    else:
        why = "each region holds the name of another: " + ", ".join(
            f"{h.region} ({h.environment}) holds {h.active}" for h in held
        )
    return (
        f"No region is active: {why}. No job runs until one is: mini-scheduler failover "
        f"--to NAME --regions {','.join(h.region for h in held)}"
    )
