"""The keys of a job entry that belong to its target: ``input``, ``dead_letter``, and the
mapping of a kind that needs one (``ecs`` for an ECS task, ``http`` for a webhook), checked
against the ``service`` they go with, and against the kinds this deployment may start
(:class:`TargetRules`: the template's prefix parameters).

Each reason names the key (``ecs.subnets ...``, ``http.method ...``); a key that does not go
with the job's kind is refused, with the kind that takes it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final
from urllib.parse import urlsplit

from mini_scheduler.jobs.limits import check_parameters_fit
from mini_scheduler.jobs.model import Target
from mini_scheduler.jobs.names import parse_service
from mini_scheduler.jobs.text import describe, kind

__all__ = ["KIND_PARAMETERS", "TargetRules", "read_dead_letter", "read_input", "target_with_keys"]

KIND_PARAMETERS: Final[Mapping[str, str]] = {
    "sqs": "TargetQueuePrefix",
    "sns": "TargetTopicPrefix",
    "events": "TargetEventBusPrefix",
    "ecs": "TargetTaskDefinitionPrefix",
    "https": "TargetWebhookPrefix",
}
"""The template parameter that lets the ticker start a kind of target, for each kind besides
Lambda's and Step Functions' (``TargetFunctionPrefix``, ``TargetStateMachinePrefix``)."""
_NO_INPUT: Final = {
    "lambda": "a Lambda function",
    "flow": "a flow",
}


@dataclass(frozen=True, slots=True)
class TargetRules:
    """What this deployment may start: for each kind of :data:`KIND_PARAMETERS`, the prefix its
    parameter holds (an empty one: the kind is off). A kind missing from ``prefixes`` is not
    checked (a load outside Lambda: the CLI, ``make build``)."""

    prefixes: Mapping[str, str] = field(default_factory=dict)

    def problem(self, target: Target) -> str | None:
        """Why this deployment may not start ``target``, or None."""
        prefix = self.prefixes.get(target.kind)
        if prefix is None:
            return None
        parameter = KIND_PARAMETERS[target.kind]
        if not prefix:
            return (
                f"service {target.service[:120]!r}: {target.kind} targets are off in this "
                f"deployment - set the template parameter {parameter} (the names the ticker "
                "may start begin with it)"
            )
        name = _short_name(target)
        within = _within_url(name, prefix) if target.kind == "https" else name.startswith(prefix)
        if not within:
            return (
                f"service {target.service[:120]!r} is outside {parameter} {prefix!r}: the "
                "ticker may start only the targets whose names begin with it"
            )
        return None


def _within_url(url: str, prefix: str) -> bool:
    """Whether a webhook's ``url`` is under ``prefix`` (TargetWebhookPrefix): the same scheme,
    host and port (``https://hooks.example.com`` is not ``https://hooks.example.com.evil.net``
    nor its port 8443), and a path under the prefix's, segment by segment."""
    try:
        have, want = urlsplit(url), urlsplit(prefix)
        ports = (have.port, want.port)
    except ValueError:
        return False
    default = {"https": 443, "http": 80}
    if (have.scheme, have.hostname) != (want.scheme, want.hostname) or (
        ports[0] or default.get(have.scheme)
    ) != (ports[1] or default.get(want.scheme)):
        return False
    path, base = have.path or "/", want.path or "/"
    return path == base or path.startswith(base if base.endswith("/") else base + "/")


def _short_name(target: Target) -> str:
    """The name a prefix applies to: a queue's, topic's or bus's name (out of its URL or ARN),
    an ECS task definition's family, a webhook's whole URL."""
    if target.kind == "https":
        return target.name
    if target.kind == "ecs":
        definition = target.name.rsplit("/", 1)[-1]
        return definition.split(":", 1)[0]
    name = target.name.rsplit("/", 1)[-1] if target.kind != "sns" else target.name
    return name.rsplit(":", 1)[-1]


def read_input(value: object) -> tuple[dict[str, Any] | None, str | None]:
    """A job's ``input`` template: a mapping of JSON (the body's shape), or the reason not."""
    if value is None:
        return None, None
    if not isinstance(value, dict):
        return None, f"input must be a mapping (the body's shape), not {kind(value)}"
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None, "input must be JSON: text keys, and no dates, binary or NaN values"
    return value, None


def read_dead_letter(value: object) -> tuple[Target | None, str | None]:
    """A job's ``dead_letter``: an ``sqs://`` queue, or the reason not."""
    if value is None:
        return None, None
    if not isinstance(value, str):
        return None, f"dead_letter must be text (sqs://<queue>), not {describe(value)}"
    parsed = parse_service(value)
    if isinstance(parsed, str):
        return None, f"dead_letter: {parsed.replace('service', 'queue', 1)}"
    if parsed.kind != "sqs":
        return None, f"dead_letter {value[:120]!r} is not a queue: write sqs://<queue name>"
    return parsed, None


def target_with_keys(
    target: Target,
    raw: Mapping[str, Any],
    parameters: Mapping[str, Any] | None,
    rules: TargetRules,
    label: str,
) -> tuple[Target | None, list[str], list[str]]:
    """``target`` with the mapping of its kind read into its ``options``, and every reason
    the entry's target keys are bad, and the warnings they give (a key nobody reads inside the
    mapping, a header that looks like a secret), each starting with ``label``."""
    reasons: list[str] = []
    warnings: list[str] = []
    problem = rules.problem(target)
    if problem:  # a kind that is off, or a name outside it: nothing else is worth saying
        return None, [problem], warnings
    queue, _ = read_dead_letter(raw.get("dead_letter"))
    letters = rules.problem(queue) if queue is not None else None
    if letters:
        reasons.append(f"dead_letter: {letters}")
    for key, owner in (("ecs", "ecs"), ("http", "https")):
        if raw.get(key) is not None and target.kind != owner:
            what = "an ecs:// target" if owner == "ecs" else "an https:// webhook"
            reasons.append(f"{key} is for {what}, not a {target.kind} target")
    if raw.get("input") is not None and target.kind in _NO_INPUT:
        reasons.append(
            f"input is not for {_NO_INPUT[target.kind]}: its run is found by the envelope it "
            "receives (parameters are its input)"
        )
    options: dict[str, Any] | None = {}
    if target.kind == "ecs":
        from mini_scheduler.jobs.ecs_options import ecs_warnings, read_ecs

        if raw.get("ecs") is None:
            reasons.append("an ecs:// target needs an ecs mapping (launch_type, subnets, ...)")
        options, found = read_ecs(raw.get("ecs"))
        reasons.extend(found)
        warnings.extend(ecs_warnings(raw.get("ecs"), label))
    elif target.kind == "https":
        from mini_scheduler.jobs.http_options import http_warnings, read_http

        options, found = read_http(raw.get("http"), target.name)
        reasons.extend(found)
        warnings.extend(http_warnings(raw.get("http"), label))
    if parameters is not None:
        fit = check_parameters_fit(target, parameters)
        if fit:
            reasons.append(fit)
    if reasons or options is None:
        return None, reasons, warnings
    return replace(target, options=options), reasons, warnings
