"""The names cron.yaml writes: a job's name (Mercury's rule, bounded to 64 characters) and its
``service``: a Lambda function (name, ``name:alias``, ``name:version``, partial or full ARN),
``flow://<state machine>``, ``sqs://<queue name, URL or ARN>``, ``sns://<topic name or ARN>``,
``events://<bus name or ARN>``, ``ecs://<cluster>/<task definition>``, or an ``https://`` URL
(a webhook)."""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

from mini_scheduler.jobs.model import MAX_NAME_LENGTH, TARGET_PREFIXES, Target
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
_QUEUE = r"(?=[A-Za-z0-9_.-]{1,80}$)[A-Za-z0-9_-]+(?:\.fifo)?"
_TOPIC = r"(?=[A-Za-z0-9_.-]{1,256}$)[A-Za-z0-9_-]+(?:\.fifo)?"
_ECS_NAME = r"[A-Za-z0-9_-]{1,255}"
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
        "sqs": (
            _QUEUE,
            rf"https://sqs\.{_REGION}\.amazonaws\.com(?:\.cn)?/{_ACCOUNT}/{_QUEUE}",
            rf"arn:{_PARTITION}:sqs:{_REGION}:{_ACCOUNT}:{_QUEUE}",
        ),
        "sns": (_TOPIC, rf"arn:{_PARTITION}:sns:{_REGION}:{_ACCOUNT}:{_TOPIC}"),
        "events": (
            r"[A-Za-z0-9_.-][A-Za-z0-9/_.-]{0,255}",
            rf"arn:{_PARTITION}:events:{_REGION}:{_ACCOUNT}:event-bus/[A-Za-z0-9/_.-]{{1,256}}",
        ),
        "ecs": (
            rf"(?:{_ECS_NAME}|arn:{_PARTITION}:ecs:{_REGION}:{_ACCOUNT}:cluster/{_ECS_NAME})/"
            rf"(?:{_ECS_NAME}(?::[0-9]{{1,10}})?"
            rf"|arn:{_PARTITION}:ecs:{_REGION}:{_ACCOUNT}:task-definition/{_ECS_NAME}:[0-9]{{1,10}})",
        ),
    }.items()
}


def _matches(kind: str, text: str) -> bool:
    return any(pattern.fullmatch(text) for pattern in _SERVICE_PATTERNS[kind])


_FORMS: Final = {
    "flow": "flow://<name> (1 to 80 letters, digits, '-' or '_') or flow://<state machine ARN>",
    "sqs": "sqs://<queue name> (1 to 80 letters, digits, '-' or '_', '.fifo' at the end of a "
    "FIFO queue), sqs://<queue URL> or sqs://<queue ARN>",
    "sns": "sns://<topic name> (1 to 256 letters, digits, '-' or '_', '.fifo' at the end of a "
    "FIFO topic) or sns://<topic ARN>",
    "events": "events://<event bus name> (1 to 256 letters, digits, '.', '-', '_' or '/') or "
    "events://<event bus ARN>",
    "ecs": "ecs://<cluster name or ARN>/<task definition family, family:revision or ARN>",
}
_NOUN: Final = {
    "flow": "state machine",
    "sqs": "queue",
    "sns": "topic",
    "events": "event bus",
    "ecs": "cluster",
}
_WHAT: Final = {
    "flow": "a Step Functions state machine",
    "sqs": "an SQS queue",
    "sns": "an SNS topic",
    "events": "an EventBridge event bus",
    "ecs": "an ECS cluster and task definition",
}
MAX_URL_LENGTH: Final = 2048


def parse_service(service: str) -> Target | str:
    """The target that ``service`` names, or the reason it names none."""
    for kind, prefix in TARGET_PREFIXES.items():
        if service.startswith(prefix):
            name = service[len(prefix) :]
            if _matches(kind, name):
                return Target(kind, name)  # type: ignore[arg-type]  # a kind of TARGET_PREFIXES
            if not name:
                noun = _NOUN[kind]
                return f"service {prefix!r} names no {noun}: write {prefix}<{noun} name>" + (
                    "/<task definition>" if kind == "ecs" else ""
                )
            return f"service {service[:300]!r} does not name {_WHAT[kind]}: write {_FORMS[kind]}"
    if service.startswith(("https://", "http://")):
        return _webhook(service)
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
        "'_'), name:alias, name:version, or function ARN, nor one of flow://, sqs://, sns://, "
        "events://, ecs:// or https://"
    )


def _webhook(url: str) -> Target | str:
    """A webhook's URL: ``https://host[:port][/path][?query]`` (``http://`` is read here and
    refused later unless the job's ``http.insecure`` allows it)."""
    shown = repr(url[:120])
    if len(url) > MAX_URL_LENGTH:
        return f"service {shown}... is longer than the {MAX_URL_LENGTH} characters of a URL"
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return f"service {shown} holds a space or a control character: encode it in the URL"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"service {shown} is not a URL ({exc})"
    if not parts.hostname:
        return f"service {shown} names no host: write https://<host>/<path>"
    if parts.username is not None or parts.password is not None:
        return (
            f"service {shown} holds a user or a password: keep secrets out of cron.yaml "
            "(http.secret_header reads one from Secrets Manager or SSM)"
        )
    if parts.fragment:
        return f"service {shown} ends with a #fragment, which is never sent: remove it"
    if port == 0:
        return f"service {shown} names port 0"
    return Target("https", url)


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
