"""A job's ``ecs`` mapping (an ``ecs://<cluster>/<task definition>`` target's): how its task
is placed (``launch_type`` or ``capacity_provider_strategy``, ``subnets``, ``security_groups``,
``assign_public_ip``, ``platform_version``, ``propagate_tags``, ``group``) and what the
overridden container receives besides the firing (``container``, ``command``, ``environment``,
``cpu``, ``memory``).

:func:`read_ecs` answers the mapping as :class:`mini_scheduler.dispatch.ecs.EcsDispatcher` reads
it (a plain dict of the keys given, values checked and made plain: an environment's values are
text), and every reason it is bad, each naming its key (``ecs.subnets ...``). A key nobody reads
is not a reason: :func:`ecs_warnings` answers its warning, as ``retry.<key>``'s is. A ``null``
value is a key left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from mini_scheduler.jobs.text import describe, kind, words
from mini_scheduler.jobs.unknown import unknown_key

__all__ = ["ECS_KEYS", "RESERVED_ENVIRONMENT_PREFIX", "ecs_warnings", "read_ecs"]

LAUNCH_TYPES: Final = ("FARGATE", "EC2", "EXTERNAL")
PROPAGATE_TAGS: Final = ("TASK_DEFINITION", "NONE")
RESERVED_ENVIRONMENT_PREFIX: Final = "MINI_SCHEDULER_"
"""The names the dispatcher gives the container (the firing id, the payload): not the job's."""
MAX_SUBNETS: Final = 16
MAX_SECURITY_GROUPS: Final = 5
MAX_PROVIDERS: Final = 20
MAX_CPU: Final = 196_608  # 192 vCPU in CPU units
MAX_MEMORY: Final = 1_048_576  # MiB

_SUBNET = re.compile(r"subnet-[0-9a-f]{1,64}")
_SECURITY_GROUP = re.compile(r"sg-[0-9a-f]{1,64}")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,255}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")
_PLATFORM = re.compile(r"LATEST|[0-9]+\.[0-9]+\.[0-9]+")
_GROUP = re.compile(r"[A-Za-z0-9:_-]{1,255}")
_PROVIDER_KEYS: Final = ("capacity_provider", "weight", "base")

Found = tuple[Any, str | None]
"""A key's value as the dispatcher reads it, or the reason it is bad."""


def _choice(key: str, choices: tuple[str, ...]) -> Callable[[Any], Found]:
    def read(value: Any) -> Found:
        if value in choices:
            return value, None
        return None, f"ecs.{key} must be one of {', '.join(choices)}, not {describe(value)}"

    return read


def _ids(
    key: str, pattern: re.Pattern[str], what: str, low: int, high: int
) -> Callable[..., Found]:
    def read(value: Any) -> Found:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, f"ecs.{key} must be a list of {what}, not {describe(value)}"
        bad = [v for v in value if not pattern.fullmatch(v)]
        if bad:
            return None, f"ecs.{key} must be a list of {what}, not {describe(bad[0][:80])}"
        if not low <= len(value) <= high:
            return None, f"ecs.{key} must hold {low} to {high} ids, not {len(value)}"
        if len(set(value)) != len(value):
            return None, f"ecs.{key} names an id twice"
        return list(value), None

    return read


def _text(key: str, pattern: re.Pattern[str], rule: str) -> Callable[[Any], Found]:
    def read(value: Any) -> Found:
        if isinstance(value, str) and pattern.fullmatch(value):
            return value, None
        return None, f"ecs.{key} must be {rule}, not {describe(value)}"

    return read


def _whole(key: str, low: int, high: int, unit: str) -> Callable[[Any], Found]:
    def read(value: Any) -> Found:
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return value, None
        return None, f"ecs.{key} must be a whole number of {unit} from {low} to {high}, not " + (
            describe(value)
        )

    return read


def _flag(value: Any) -> Found:
    if isinstance(value, bool):
        return value, None
    return None, f"ecs.assign_public_ip must be true or false, not {describe(value)}"


def _command(value: Any) -> Found:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value), None
    shown = (
        kind(value)
        if not isinstance(value, list)
        else "a list that holds " + ("nothing" if not value else "something other than text")
    )
    return None, f"ecs.command must be a list of text (the container's arguments), not {shown}"


def _environment(value: Any) -> Found:
    """Names of letters, digits and ``_`` (not ``MINI_SCHEDULER_...``), each to text, a number
    or a boolean (a value may be secret: a reason shows its kind, never itself)."""
    if not isinstance(value, dict):
        return None, f"ecs.environment must be a mapping of names to values, not {kind(value)}"
    found: dict[str, str] = {}
    for name, item in value.items():
        shown = describe(name)[:80]
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            return None, f"ecs.environment: {shown} is not a variable name (letters, digits, _)"
        if name.upper().startswith(RESERVED_ENVIRONMENT_PREFIX):
            return None, f"ecs.environment: {shown} is reserved (mini-scheduler sets it)"
        if isinstance(item, bool):
            found[name] = "true" if item else "false"
        elif isinstance(item, str | int | float):
            found[name] = str(item)
        else:
            return None, f"ecs.environment.{name} must be text, a number or a boolean, not " + (
                kind(item)
            )
    return found, None


def _strategy(value: Any) -> Found:
    what = f"a list of 1 to {MAX_PROVIDERS} mappings of {words(_PROVIDER_KEYS)}"
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_PROVIDERS:
        return None, f"ecs.capacity_provider_strategy must be {what}, not {describe(value)}"
    items = []
    for number, item in enumerate(value, 1):
        found, reason = _provider(item, f"ecs.capacity_provider_strategy[{number}]")
        if reason:
            return None, reason
        items.append(found)
    if sum(1 for item in items if item["base"]) > 1:
        return None, "ecs.capacity_provider_strategy: only one capacity provider may have a base"
    if not any(item["weight"] for item in items):
        return None, "ecs.capacity_provider_strategy: one capacity provider needs a weight above 0"
    return items, None


def _provider(item: Any, where: str) -> Found:
    if not isinstance(item, dict):
        return None, f"{where} must be a mapping of {words(_PROVIDER_KEYS)}, not {describe(item)}"
    extra = [str(key)[:40] for key in item if key not in _PROVIDER_KEYS]
    if extra:
        return None, f"{where}: unknown key {extra[0]} - the keys are {words(_PROVIDER_KEYS)}"
    name = item.get("capacity_provider")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return None, f"{where}.capacity_provider must be a capacity provider's name, not " + (
            describe(name)
        )
    found: dict[str, Any] = {"capacityProvider": name}
    for key, high in (("weight", 1000), ("base", 100_000)):
        number = item.get(key, 0)
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= high:
            return None, f"{where}.{key} must be a whole number from 0 to {high}, not " + (
                describe(number)
            )
        found[key] = number
    return found, None


_READERS: Final[Mapping[str, Callable[[Any], Found]]] = {
    "launch_type": _choice("launch_type", LAUNCH_TYPES),
    "capacity_provider_strategy": _strategy,
    "subnets": _ids("subnets", _SUBNET, "subnet ids (subnet-...)", 1, MAX_SUBNETS),
    "security_groups": _ids(
        "security_groups", _SECURITY_GROUP, "security group ids (sg-...)", 1, MAX_SECURITY_GROUPS
    ),
    "assign_public_ip": _flag,
    "platform_version": _text("platform_version", _PLATFORM, "LATEST or a version like 1.4.0"),
    "container": _text("container", _NAME, "a container name of the task definition"),
    "command": _command,
    "environment": _environment,
    "cpu": _whole("cpu", 0, MAX_CPU, "CPU units"),
    "memory": _whole("memory", 6, MAX_MEMORY, "MiB"),
    "propagate_tags": _choice("propagate_tags", PROPAGATE_TAGS),
    "group": _text("group", _GROUP, "a task group (letters, digits, ':', '-' or '_')"),
}
ECS_KEYS: Final = tuple(_READERS)


def read_ecs(value: object) -> tuple[dict[str, Any] | None, list[str]]:
    """The ``ecs`` mapping as the dispatcher reads it (only the keys given), and every reason
    it is bad; ``(None, [])`` for no mapping (whether the target needs one is the caller's)."""
    if value is None:
        return None, []
    if not isinstance(value, dict):
        return None, [f"ecs must be a mapping (launch_type, subnets, ...), not {describe(value)}"]
    options: dict[str, Any] = {}
    reasons: list[str] = []
    for key, reader in _READERS.items():
        if value.get(key) is None:
            continue
        found, reason = reader(value[key])
        if reason:
            reasons.append(reason)
        else:
            options[key] = found
    reasons.extend(_together(value, options))
    return (None if reasons else options), reasons


def _together(value: Mapping[str, Any], options: Mapping[str, Any]) -> list[str]:
    """What the keys say about each other (of the keys given, valid or not)."""
    given = {key for key in _READERS if value.get(key) is not None}
    launch = options.get("launch_type")
    reasons = []
    if {"launch_type", "capacity_provider_strategy"} <= given:
        reasons.append("ecs.launch_type and ecs.capacity_provider_strategy exclude each other")
    if launch == "FARGATE" and "subnets" not in given:
        reasons.append("ecs.launch_type FARGATE needs ecs.subnets (its tasks use awsvpc)")
    reasons.extend(
        f"ecs.{key} goes with ecs.subnets (a task's awsvpc network)"
        for key in ("security_groups", "assign_public_ip")
        if key in given and "subnets" not in given
    )
    if launch in ("EC2", "EXTERNAL"):
        reasons.extend(
            f"ecs.{key} is for FARGATE tasks, not {launch}"
            for key in ("platform_version", "assign_public_ip")
            if options.get(key) not in (None, False)
        )
    return reasons


def ecs_warnings(value: object, label: str) -> list[str]:
    """The warnings for the keys of an ``ecs`` mapping that nobody reads (``label`` names the
    entry, as the load report's other warnings do: ``Job <name>``)."""
    if not isinstance(value, dict):
        return []
    return [
        unknown_key(label, key, ECS_KEYS, prefix="ecs.") for key in value if key not in _READERS
    ]
