"""Hypothesis strategies for the handlers' events: any JSON value, and near misses of the sample
events in events/ (a key dropped, added or renamed, a value replaced by one of another type or
by a value that is almost right, a string cut or stretched, the Step Functions input re-encoded).

What Lambda hands a Python handler is ``json.loads`` of the payload, which takes ``NaN`` and
``Infinity`` too: the values below include them, and lone surrogates (``"\\ud800"`` is valid
JSON)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from tests.conftest import EVENTS, load_event

TICKER_SAMPLES = (
    "tick.json",
    "catch-up.json",
    "scheduled-event.json",
    "manual-run.json",
    "environment-get.json",
    "environment-set.json",
    "pause.json",
    "resume.json",
    "schedule-create.json",
    "schedule-list.json",
    "schedule-delete.json",
    "backfill.json",
    "backfill-status.json",
    "rerun.json",
)
RECORDER_SAMPLES = (
    "lambda-destination-success.json",
    "lambda-destination-failure.json",
    "sfn-status-succeeded.json",
    "sfn-status-failed.json",
    "sfn-status-redriven.json",
    "ecs-task-stopped.json",
    "ecs-task-failed.json",
    "sqs-completions.json",  # the completion queue's batch: each body one of the above
)
assert sorted(TICKER_SAMPLES + RECORDER_SAMPLES) == sorted(p.name for p in EVENTS.glob("*.json"))

# Keys the handlers look for, so that a generated object reaches past the first check.
KEYS = (
    "tick",
    "deferred",
    "shard",
    "shards",
    "time",
    "detail-type",
    "job",
    "operator",
    "parameters",
    "environment",
    "active",
    "pause",
    "resume",
    "schedule",
    "schedules",
    "backfill",
    "backfillStatus",
    "rerun",
    "from",
    "to",
    "rate",
    "at",
    "cron",
    "service",
    "source",
    "detail",
    "status",
    "name",
    "input",
    "stopDate",
    "startDate",
    "error",
    "cause",
    "requestContext",
    "condition",
    "requestPayload",
    "firingId",
    "responseContext",
    "functionError",
    "responsePayload",
    "errorType",
    "errorMessage",
    "timestamp",
    "lastStatus",
    "startedBy",
    "overrides",
    "containerOverrides",
    "containers",
    "exitCode",
    "stopCode",
    "stoppedReason",
    "stoppedAt",
)

# Strings that are almost right, or right, for one of those keys.
STRINGS = (
    "",
    " ",
    "\x00",
    "\ud800",
    "é",
    "x" * 3000,
    "2026-11-30T14:00:00Z",
    "2026-11-30T14:00:00.999+05:30",
    "2026-11-30T14:00:00",
    "2026-11-30",
    "2026-02-30T14:00:00Z",
    "2026-11-30T24:00:00Z",
    "1969-12-31T23:59:00Z",
    "1970-01-01T00:00:00Z",
    "2999-12-31T23:59:00Z",
    "3000-01-01T00:00:00Z",
    "9999-12-31T23:59:00Z",
    "9999-12-31T23:59:59-01:00",
    "0001-01-01T00:00:00+01:00",
    "0001-01-01T00:00:00Z",
    "morning-report",
    "hourly-cleanup",
    "heartbeat",
    "no-such-job",
    "morning.report",
    "jane.doe",
    "jane doe",
    "a" * 128,
    "a" * 129,
    "ops@example.com",
    "prod",
    "DR",
    "PROD",
    "D R",
    "-",
    "morning-report@2026-11-30T14:00:00Z",
    "hourly-cleanup@2026-11-30T14:15:00Z",
    "heartbeat@2026-11-30T14:00:15Z",
    "morning-report@manual-2026-11-30T14:03:12.345Z-1a2b3c4d",
    "morning-report@2026-11-30T14:00:00",
    "@2026-11-30T14:00:00Z",
    "x" * 3000 + "@2026-11-30T14:00:00Z",
    "\ud800@2026-11-30T14:00:00Z",
    "morning report@2026-11-30T14:00:00Z",
    "hourly-cleanup@2026-11-30T14-15-00Z",
    "hourly-cleanup@manual-2026-11-30T14-15-00.000Z-1a2b3c4d",
    "Success",
    "RetriesExhausted",
    "EventAgeExceeded",
    "Maybe",
    "Unhandled",
    "Handled",
    "SUCCEEDED",
    "FAILED",
    "TIMED_OUT",
    "ABORTED",
    "RUNNING",
    "PENDING_REDRIVE",
    "aws.states",
    "aws.ecs",
    "ECS Task State Change",
    "STOPPED",
    "TaskFailedToStart",
    "MINI_SCHEDULER_FIRING_ID",
    "aws.events",
    "Scheduled Event",
    "Step Functions Execution Status Change",
    '{"firingId": "morning-report@2026-11-30T14:00:00Z"}',
    '{"firingId": 5}',
    "{",
    "[]",
    "null",
)

NUMBERS = st.one_of(
    st.integers(),
    st.integers(-(2**63), 2**63),
    st.floats(),  # NaN and infinities included: Lambda's json.loads takes them
    st.sampled_from([0, 1, -1, 2, 1024, 1025, 1796048104020, 10**20, -(10**20), 1e300]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    NUMBERS,
    st.text(max_size=30),
    st.sampled_from(STRINGS),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=10)), inner, max_size=5)
    ),
    max_leaves=16,
)
"""Any JSON value as Lambda would decode it, with the handlers' keys and almost-right strings."""

Path = tuple[Any, ...]


def _paths(value: Any, here: Path = ()) -> list[Path]:
    """Every place in ``value`` a mutation can act on, the root included."""
    found = [here]
    if isinstance(value, Mapping):
        for key, item in value.items():
            found += _paths(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*here, index))
    return found


def _get(value: Any, path: Path) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(root: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    _get(root, path[:-1])[path[-1]] = new
    return root


def _tweak_text(draw: st.DrawFn, text: str) -> str:
    how = draw(st.sampled_from(["cut", "grow", "case", "space", "char", "drop", "repeat"]))
    if how == "cut":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if how == "grow":
        return text + draw(st.text(min_size=1, max_size=5))
    if how == "case":
        return text.swapcase()
    if how == "space":
        return f" {text} "
    if how == "repeat":
        return text * draw(st.integers(2, 200))
    if not text:
        return draw(st.text(min_size=1, max_size=3))
    at = draw(st.integers(0, len(text) - 1))
    if how == "drop":
        return text[:at] + text[at + 1 :]
    return text[:at] + draw(st.characters()) + text[at + 1 :]


def _tweak_number(draw: st.DrawFn, number: float) -> Any:
    how = draw(st.sampled_from(["plus", "minus", "negate", "scale", "float", "text", "bool"]))
    if how == "plus":
        return number + 1
    if how == "minus":
        return number - 1
    if how == "negate":
        return -number
    if how == "scale":
        return number * draw(st.sampled_from([1000, 10**6, 10**12]))
    if how == "float":
        return float(number) + 0.5
    if how == "text":
        return str(number)
    return bool(number)


@st.composite
def mutation(draw: st.DrawFn, event: Any) -> Any:
    """``event`` changed in one place."""
    event = copy.deepcopy(event)
    path = draw(st.sampled_from(_paths(event)))
    value = _get(event, path)
    parent = _get(event, path[:-1]) if path else None
    actions = ["replace", "almost", "wrap"]
    if isinstance(parent, dict):
        actions += ["delete", "rename"]
    if isinstance(value, dict):
        actions += ["add", "add", "empty"]
    if isinstance(value, str):
        actions += ["text", "text", "text"]
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            actions += ["inner", "inner"]
    if isinstance(value, int | float) and not isinstance(value, bool):
        actions += ["number", "number"]
    action = draw(st.sampled_from(actions))
    if action == "replace":
        return _set(event, path, draw(JSON))
    if action == "almost":
        return _set(event, path, draw(st.sampled_from(STRINGS)))
    if action == "wrap":
        return _set(event, path, [value])
    if action == "delete":
        assert isinstance(parent, dict)
        del parent[path[-1]]
        return event
    if action == "rename":
        assert isinstance(parent, dict)
        key = path[-1]
        new_key = draw(st.one_of(st.sampled_from(KEYS), st.just(str(key).upper())))
        parent[new_key] = parent.pop(key)
        return event
    if action == "add":
        value[draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)))] = draw(JSON)
        return event
    if action == "empty":
        return _set(event, path, {})
    if action == "text":
        return _set(event, path, _tweak_text(draw, value))
    if action == "inner":
        inner = draw(mutation(json.loads(value)))
        return _set(event, path, json.dumps(inner, allow_nan=True))
    return _set(event, path, _tweak_number(draw, value))


@st.composite
def near_misses(draw: st.DrawFn, names: tuple[str, ...]) -> Any:
    """One of the sample events ``names``, changed in one to three places."""
    event: Any = load_event(draw(st.sampled_from(names)))
    for _ in range(draw(st.integers(1, 3))):
        event = draw(mutation(event))
    return event


def field_variants(value: Any) -> list[Any]:
    """The wrong values the field sweep puts in place of ``value``: another type, out of range,
    empty, huge, not encodable, almost right."""
    variants: list[Any] = [None, [value], {"value": value}]
    if isinstance(value, str):
        variants += [
            "",
            5,
            "x" * 3000 + value,
            "\ud800" + value,
            value.swapcase(),
            value + "\x00",
            "9999-12-31T23:59:59-01:00",
            "9999-12-31T23:59:00Z",
        ]
    elif isinstance(value, bool):
        variants += [not value, "true", 1]
    elif isinstance(value, int | float):
        variants += [1e300, -(10**17), float("nan"), float("inf"), True, str(value), -value]
    elif isinstance(value, dict):
        variants += [[], "x", {}, 0]
    elif isinstance(value, list):
        variants += [{}, "x", []]
    return variants


def field_sweep(names: tuple[str, ...]) -> list[tuple[str, str, Any]]:
    """(sample, where, event) for every place in every sample event and every wrong value for
    it (and, in a mapping, the key left out)."""
    cases: list[tuple[str, str, Any]] = []
    for name in names:
        sample = load_event(name)
        for path in _paths(sample):
            where = "/".join(map(str, path)) or "<event>"
            original = _get(sample, path)
            for variant in field_variants(original):
                event = _set(copy.deepcopy(sample), path, variant)
                cases.append((name, f"{where} = {variant!r:.40}", event))
            if path and isinstance(_get(sample, path[:-1]), dict):
                event = copy.deepcopy(sample)
                del _get(event, path[:-1])[path[-1]]
                cases.append((name, f"{where} left out", event))
    return cases
