"""A job's ``input``: the body its target receives, in the job's own shape, with the firing's
values put in where the template names them (EventBridge Scheduler's context attributes are the
model).

A text value that is exactly one placeholder becomes that value, with its type (``attempt`` a
number, ``parameters`` a mapping); a placeholder inside longer text becomes its text (JSON for
a value that is not text). Keys are never filled in, and ``<...>`` text that names no value is
left as written. The placeholders:

``<job>``, ``<firingId>``, ``<scheduledTime>``, ``<attempt>``, ``<origin>``, ``<manual>``,
``<parameters>``, and ``<parameters.NAME>`` (one parameter; null when the firing has none of
that name); ``<plannedTime>``, the instant a job's ``jitter`` or ``window`` started the firing
at (its ``scheduledTime`` for a job without them).

Lambda and flow targets take no ``input``: the recorder finds their run by the envelope they
receive (:mod:`mini_scheduler.jobs.validate` refuses it there).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["PLACEHOLDERS", "fill_input", "placeholders_in"]

PLACEHOLDERS: Final = (
    "job",
    "firingId",
    "scheduledTime",
    "attempt",
    "origin",
    "manual",
    "parameters",
    "plannedTime",
)
_PLACEHOLDER: Final = re.compile(
    r"<(job|firingId|scheduledTime|plannedTime|attempt|origin|manual"
    r"|parameters(?:\.[^<>]{1,200})?)>"
)


def _value(name: str, envelope: Mapping[str, Any]) -> Any:
    if name.startswith("parameters."):
        parameters = envelope.get("parameters")
        key = name[len("parameters.") :]
        return parameters.get(key) if isinstance(parameters, Mapping) else None
    if name == "plannedTime":
        return envelope.get(name, envelope.get("scheduledTime"))
    return envelope.get(name)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _fill(template: Any, envelope: Mapping[str, Any]) -> Any:
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            return _value(whole.group(1), envelope)
        if "<" not in template:
            return template
        return _PLACEHOLDER.sub(lambda found: _text(_value(found.group(1), envelope)), template)
    if isinstance(template, Mapping):
        return {key: _fill(value, envelope) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill(value, envelope) for value in template]
    return template


def fill_input(template: Mapping[str, Any], envelope: Mapping[str, Any]) -> dict[str, Any]:
    """``template`` with the placeholders filled in from ``envelope`` (what a target would
    receive without a template: :func:`mini_scheduler.model.payload`)."""
    return {key: _fill(value, envelope) for key, value in template.items()}


def placeholders_in(template: Any) -> set[str]:
    """The placeholders ``template`` names (for the docs and the load report)."""
    found: set[str] = set()
    if isinstance(template, str):
        found.update(_PLACEHOLDER.findall(template))
    elif isinstance(template, Mapping):
        for value in template.values():
            found |= placeholders_in(value)
    elif isinstance(template, list):
        for value in template:
            found |= placeholders_in(value)
    return found
