"""The names cron.yaml writes: a job's name (Mercury's rule, bounded to 64 characters) and its
``service``, a Lambda function (name, ``name:alias``, ``name:version``, partial or full ARN) or
``flow://<state machine name or ARN>``."""

from __future__ import annotations

import re
from typing import Final

from mini_scheduler.jobs.model import FLOW_PREFIX, MAX_NAME_LENGTH, Target
from mini_scheduler.jobs.text import quoted

__all__ = ["NAME_CHARS", "name_problem", "parse_service", "readable_name"]

NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
"""The characters a job name may hold."""
_FUNCTION_CHARS: Final = NAME_CHARS - {"."}
_EDGE: Final = frozenset("._-")

_QUALIFIER = r"(?:\$LATEST|[A-Za-z0-9_-]{1,128})"
_FUNCTION = r"[A-Za-z0-9_-]{1,64}"
_PARTITION = r"aws(?:-[a-z]+)*"
_REGION = r"[a-z]{2}(?:-[a-z]+)+-[0-9]+"
_ACCOUNT = r"[0-9]{12}"
_SERVICE_PATTERNS: Final = {
    kind: tuple(re.compile(pattern) for pattern in patterns)
    for kind, patterns in {
        "lambda": (
            rf"{_FUNCTION}(?::{_QUALIFIER})?",
            rf"{_ACCOUNT}:function:{_FUNCTION}(?::{_QUALIFIER})?",
            rf"arn:{_PARTITION}:lambda:{_REGION}:{_ACCOUNT}:function:{_FUNCTION}(?::{_QUALIFIER})?",
        ),
        "flow": (
            r"[A-Za-z0-9_-]{1,80}",
            # a version or alias ARN (``:<version>``/``:<alias>``) starts that version too
            rf"arn:{_PARTITION}:states:{_REGION}:{_ACCOUNT}:stateMachine:[A-Za-z0-9_-]{{1,80}}"
            r"(?::[A-Za-z0-9_-]{1,80})?",
        ),
    }.items()
}


def _matches(kind: str, text: str) -> bool:
    return any(pattern.fullmatch(text) for pattern in _SERVICE_PATTERNS[kind])


def parse_service(service: str) -> Target | str:
    """The target that ``service`` names, or the reason it names none."""
    if service.startswith(FLOW_PREFIX):
        name = service[len(FLOW_PREFIX) :]
        if _matches("flow", name):
            return Target("flow", name)
        if not name:
            return "service 'flow://' names no state machine: write flow://<state machine name>"
        return (
            f"service {service!r} does not name a Step Functions state machine: write "
            "flow://<name> (1 to 80 letters, digits, '-' or '_') or flow://<state machine ARN>"
        )
    if _matches("lambda", service):
        return Target("lambda", service)
    if not service:
        return "service is empty"
    if service.startswith("arn:") and ":states:" in service:
        return f"service {service!r} is a Step Functions ARN: write it as flow://{service}"
    if "." in service and set(service) <= NAME_CHARS:
        return (
            f"service {service!r} is a Mercury route name, not a Lambda function name (a dot is "
            "not allowed): name the Lambda function (or flow://state-machine) instead"
        )
    base = service.split(":", 1)[0]
    if set(base) <= _FUNCTION_CHARS and len(base) > 64 and ":" not in service:
        return f"service {service!r} is longer than the 64 characters of a Lambda function name"
    return (
        f"service {service!r} is not a Lambda function name (1 to 64 letters, digits, '-' or "
        "'_'), name:alias, name:version, or function ARN, nor flow://<state machine>"
    )


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid job name (Mercury's rule, bounded to 64), or None."""
    if not name:
        return "name is empty"
    shown = quoted(name, MAX_NAME_LENGTH)
    if not set(name) <= NAME_CHARS:
        return f"name {shown} may hold only letters, digits, '.', '_' and '-'"
    if name[0] in _EDGE or name[-1] in _EDGE:
        return f"name {shown} must not start or end with '.', '_' or '-'"
    if ".." in name:
        return f"name {shown} must not hold '..'"
    if len(name) > MAX_NAME_LENGTH:
        return f"name {quoted(name, 20)} is longer than {MAX_NAME_LENGTH} characters"
    return None


def readable_name(name: object) -> str | None:
    """``name`` when a message may show it as the entry's name: text of 1 to 64 of the
    characters a job name may hold. Anything else (a number, a control character, a line of
    someone else's log format, a megabyte) is shown only quoted and cut, in the reason."""
    if isinstance(name, str) and 0 < len(name) <= MAX_NAME_LENGTH and set(name) <= NAME_CHARS:
        return name
    return None
