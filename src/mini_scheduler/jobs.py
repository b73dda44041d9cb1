"""cron.yaml: read the job declarations, check every entry, and say what loaded and what did not.

The format is Mercury's (seed 000, "Declare the jobs"), with AWS targets and this project's
per-job additions (README.md, "cron.yaml")::

    jobs:
      - name: "morning-report"
        cron: "0 0 9 * * ?"
        timezone: "America/New_York"
        service: "mini-scheduler-sample-report"    # Lambda; flow://<state machine> for a flow
        parameters: {region: "east"}
    deferred.start: false

Two kinds of trouble, kept apart:

* A file that cannot be read as a whole (empty, not YAML, not a mapping with a ``jobs`` list, a
  bad file-level setting, too large, too deep, an alias bomb) raises :class:`CronFileError`
  naming the source. Nothing is half-loaded: the caller gets a whole file or an error.
* A bad entry is skipped with ``Invalid job entry#<n> - check name, schedule and service:
  <reason>`` and the others load; every reason found in an entry is listed (seed 001's
  collect-all-errors validation), joined with ``"; "``. An entry whose name reads as a name
  (:func:`readable_name`) is named after its number, ``Invalid job entry#2 (bad-cron) - ...``;
  any other name, and any key, is shown quoted, cut and on one line, never as it is. A reason
  names a parameter by its key or path and the rule it breaks, never by its value.

:func:`load` never reads the clock or the network; :mod:`mini_scheduler.locations` finds the
file. Decisions where the spec is silent:

* A plain scalar that looks like a date (``2026-01-01``) stays text, as written: JSON has no
  date type, and the target receives exactly what the file says. An explicit ``!!timestamp``,
  ``!!binary``, ``!!set``, ``!!omap`` or ``!!pairs`` value in ``parameters`` is refused with a
  reason, as are NaN and infinities, and non-text keys at any depth.
* ``null`` for an optional key means the key is absent (``timezone:`` with no value is the
  default zone); ``null`` for a required key is "missing".
* A key written twice in one mapping is refused: in a job entry (its parameters included) the
  entry is invalid; at the top level of the file the whole file is; elsewhere it is a warning.
* A YAML merge key (``<<: *defaults``) works, so entries can share settings.
* A five-field statement is refused with its Quartz form (:mod:`mini_scheduler.unix_cron`); an
  unknown zone with the id it most likely meant; a statement Quartz accepts that selects no time
  from 1970 to 2999 in its zone (``0 0 0 30 2 ?``) loads with a warning that it never fires.
"""

from __future__ import annotations

import decimal
import difflib
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol, cast
from zoneinfo import ZoneInfo

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from mini_scheduler.cron import CronExpression, CronSyntaxError, parse
from mini_scheduler.errors import CronFileError, UnknownTimeZoneError
from mini_scheduler.unix_cron import unix_hint
from mini_scheduler.zones import get_zone, is_fixed_offset, suggest_zone

__all__ = [
    "DEFAULT_TIMEZONE",
    "DISPATCH_RESERVE",
    "DYNAMODB_ITEM_LIMIT",
    "LAMBDA_ASYNC_PAYLOAD_LIMIT",
    "MAX_FILE_BYTES",
    "STEP_FUNCTIONS_INPUT_LIMIT",
    "CronFile",
    "Job",
    "Problem",
    "Target",
    "check_parameters_fit",
    "load",
    "name_problem",
    "parameters_limit",
    "parse_service",
    "readable_name",
    "scheduled_line",
]

# -- limits -----------------------------------------------------------------------------------

DEFAULT_TIMEZONE: Final = "UTC"
MAX_FILE_BYTES: Final = 1024 * 1024
"""A cron file larger than this (1 MiB) is refused before it is parsed."""
MAX_DEPTH: Final = 32
"""Mappings and lists nested deeper than this are refused (aliases count at their full depth)."""
MAX_NODES: Final = 100_000
"""Refused above this many YAML nodes, counting every alias as the whole subtree it repeats."""
MAX_EXPANDED_TEXT: Final = 4 * MAX_FILE_BYTES
"""Refused above this many characters of scalar text, aliases expanded (a large string repeated)."""

MAX_NAME_LENGTH: Final = 64
MAX_TIMEOUT: Final = 7 * 86400
DEFAULT_LAMBDA_TIMEOUT: Final = 900
DEFAULT_FLOW_TIMEOUT: Final = 3600
DEFAULT_MISFIRE_GRACE: Final = 3600
MAX_MISFIRE_GRACE: Final = 7 * 86400
DEFAULT_MISFIRE_MAX: Final = 100
MAX_MISFIRE_MAX: Final = 10_000
MAX_PARAMETER_DEPTH: Final = MAX_DEPTH - 1
"""Lists and maps nested in the parameters: DynamoDB stores 32 levels, the parameters map is the
item's first."""
_DYNAMODB_NUMBERS: Final = decimal.Context(
    prec=38,
    Emin=-128,
    Emax=126,
    traps=[decimal.Clamped, decimal.Overflow, decimal.Inexact, decimal.Rounded, decimal.Underflow],
)
_DYNAMODB_LARGEST: Final = decimal.Decimal("1E126")
_LARGEST_BITS: Final = 420
"""1E126 < 2**419: an integer of more bits is past DynamoDB's range."""
_EXACT: Final = decimal.Context(prec=400)
"""Enough digits to normalise any number DynamoDB stores without rounding it."""
_DYNAMODB_SMALLEST: Final = decimal.Decimal("1E-130")

LAMBDA_ASYNC_PAYLOAD_LIMIT: Final = 1_048_576
"""An asynchronous (``InvocationType=Event``) Lambda invoke carries at most 1 MB."""
STEP_FUNCTIONS_INPUT_LIMIT: Final = 262_144
"""A Step Functions execution input is at most 256 KiB."""
DYNAMODB_ITEM_LIMIT: Final = 409_600
"""A DynamoDB item (the job's latest-state record holds the parameters) is at most 400 KB."""
DISPATCH_RESERVE: Final = 8_192
"""Kept for the payload's envelope (job, firingId, scheduledTime, origin, manual, operator) and
for the state record's other attributes, so that only the parameters need measuring."""

# -- the types --------------------------------------------------------------------------------

Level = Literal["error", "warning", "info"]
Misfire = Literal["fire_now", "fire_all", "skip"]
Overlap = Literal["allow", "skip"]
MISFIRE_POLICIES: Final[tuple[Misfire, ...]] = ("fire_now", "fire_all", "skip")
OVERLAP_POLICIES: Final[tuple[Overlap, ...]] = ("allow", "skip")
FLOW_PREFIX: Final = "flow://"


@dataclass(frozen=True, slots=True)
class Target:
    """What a job runs: a Lambda function, or a Step Functions state machine (a "flow")."""

    kind: Literal["lambda", "flow"]
    name: str
    """Lambda: a function name, ``name:alias``/``name:version``, a partial or a full ARN.
    Flow: a state machine name or ARN (without ``flow://``)."""

    @property
    def service(self) -> str:
        """The target as written in cron.yaml (``flow://x`` for a flow)."""
        return FLOW_PREFIX + self.name if self.kind == "flow" else self.name


@dataclass(frozen=True, slots=True)
class Job:
    """One loaded entry of cron.yaml. ``parameters`` is a plain dict: treat it as read-only."""

    name: str
    statement: str
    expression: CronExpression
    zone: str
    tz: ZoneInfo
    target: Target
    parameters: Mapping[str, Any] = field(hash=False)
    description: str | None
    misfire: Misfire
    overlap: Overlap
    timeout: int
    enabled: bool
    entry: int

    @property
    def service(self) -> str:
        return self.target.service

    @property
    def schedule(self) -> str:
        """``<statement> @<zone>``, the job state record's schedule (seed 000)."""
        return f"{self.statement} @{self.zone}"


@dataclass(frozen=True, slots=True)
class Problem:
    """Something to report about a file: ``message`` is the exact log text."""

    level: Level
    message: str
    entry: int | None = None


class LogSink(Protocol):
    """What :meth:`CronFile.log` needs: a ``logging.Logger`` or a Powertools ``Logger``."""

    def info(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = ...
    ) -> None: ...

    def warning(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = ...
    ) -> None: ...

    def error(
        self, msg: object, *args: object, extra: Mapping[str, object] | None = ...
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class CronFile:
    """A cron file read as a whole: the jobs that loaded, the settings, and what to report."""

    jobs: tuple[Job, ...]
    source: str
    deferred_start: bool
    leader_election: bool
    misfire_grace: int
    misfire_max: int
    problems: tuple[Problem, ...]
    version: str
    entries: int = 0
    """How many entries the ``jobs`` list holds, loaded or skipped."""

    def job(self, name: str) -> Job | None:
        for job in self.jobs:
            if job.name == name:
                return job
        return None

    @property
    def ok(self) -> bool:
        """No error: every entry loaded (warnings allowed)."""
        return not any(problem.level == "error" for problem in self.problems)

    @property
    def skipped(self) -> int:
        """How many entries were skipped."""
        return self.entries - len(self.jobs)

    def lines(self) -> tuple[Problem, ...]:
        """Every line of the load report in file order: the file's own problems, then for each
        entry its problems followed by its ``Scheduled job: ...`` line when it loaded."""
        by_entry: dict[int | None, list[Problem]] = {}
        for problem in self.problems:
            by_entry.setdefault(problem.entry, []).append(problem)
        loaded = {job.entry: job for job in self.jobs}
        report = list(by_entry.pop(None, []))
        numbers = sorted({*(n for n in by_entry if n is not None), *loaded})
        for entry in numbers:
            report.extend(by_entry.get(entry, []))
            job = loaded.get(entry)
            if job is not None:
                report.append(Problem("info", scheduled_line(job), entry))
        return tuple(report)

    def log(self, logger: LogSink) -> None:
        """Log the load report, each line at its level."""
        for line in self.lines():
            extra = {"cronFile": self.source, "entry": line.entry}
            if line.level == "error":
                logger.error(line.message, extra=extra)
            elif line.level == "warning":
                logger.warning(line.message, extra=extra)
            else:
                logger.info(line.message, extra=extra)


def scheduled_line(job: Job) -> str:
    """The load report's line for a job that loaded (seed 000's text)."""
    return (
        f"Scheduled job: {job.name}, service: {job.service}, statement: {job.statement}, "
        f"time zone: {job.zone}"
    )


# -- services ---------------------------------------------------------------------------------

_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_FUNCTION_CHARS: Final = _NAME_CHARS - {"."}
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
    if "." in service and set(service) <= _NAME_CHARS:
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


# -- parameters -------------------------------------------------------------------------------


def parameters_limit(kind: Literal["lambda", "flow"]) -> int:
    """The most bytes of compact UTF-8 JSON the parameters of a ``kind`` target may take."""
    carrier = LAMBDA_ASYNC_PAYLOAD_LIMIT if kind == "lambda" else STEP_FUNCTIONS_INPUT_LIMIT
    return min(carrier, DYNAMODB_ITEM_LIMIT) - DISPATCH_RESERVE


def _limit_reason(kind: Literal["lambda", "flow"]) -> str:
    carrier = LAMBDA_ASYNC_PAYLOAD_LIMIT if kind == "lambda" else STEP_FUNCTIONS_INPUT_LIMIT
    if carrier <= DYNAMODB_ITEM_LIMIT:
        what = f"a Step Functions input of {carrier} bytes"
    else:
        what = f"the {DYNAMODB_ITEM_LIMIT}-byte DynamoDB item that records the job's state"
    return f"{what}, less {DISPATCH_RESERVE} kept for the rest of the dispatch"


def printable(path: str, limit: int = 200) -> str:
    """A key or a parameter's path as a message shows it: keys may be long, and hold line
    breaks or other control characters, the message is one short line."""
    cut = path if len(path) <= limit else path[:limit] + "..."
    return (
        cut if cut.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    )


def _json_problem(value: object, path: str, depth: int) -> str | None:
    """Why ``value`` cannot travel as JSON, or None. The reason names the parameter's path and
    the rule it breaks, never the value: a parameter's value may be a secret."""
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"parameter {printable(path)} is NaN or an infinity, which JSON cannot carry"
    if isinstance(value, int | float):
        if _storable_number(value):
            return None
        return (
            f"parameter {printable(path)} is a number DynamoDB cannot store (at most 38 digits, "
            "from 1E-130 to 9.99E+125): write it as text"
        )
    if depth >= MAX_PARAMETER_DEPTH:
        return f"parameter {printable(path)} nests deeper than {MAX_PARAMETER_DEPTH} levels"
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _json_problem(item, f"{path}[{index}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return (
                    f"parameter {printable(path)} has a key {repr(key)[:40]} that is not text: "
                    "quote it"
                )
            if not key:
                return f"parameter {printable(path)} has an empty key, which DynamoDB cannot store"
            found = _json_problem(item, f"{path}.{key}", depth + 1)
            if found:
                return found
        return None
    kind = type(value).__name__
    return (
        f"parameter {printable(path)} holds a {kind} value, which JSON cannot carry: "
        "write it as text"
    )


def check_parameters_fit(target: Target, parameters: Mapping[str, Any]) -> str | None:
    """Why ``parameters`` cannot be dispatched to ``target``, or None when they can.

    They must be JSON (text keys, no NaN, no dates or bytes), and their compact UTF-8 JSON must
    fit :func:`parameters_limit` for the target's kind: an asynchronous Lambda invoke (1 MB), a
    Step Functions input (256 KiB), and the 400 KB DynamoDB item that records the job's latest
    state, each less :data:`DISPATCH_RESERVE`. The ticker calls it for a manual run's merged
    parameters as well.
    """
    if not isinstance(parameters, Mapping):
        return f"parameters must be a mapping of keys to values, not {_kind(parameters)}"
    plain = dict(parameters)
    for key, value in plain.items():
        if not isinstance(key, str):
            return f"parameters have a key {repr(key)[:40]} that is not text: quote it"
        if not key:
            return "parameters have an empty key, which DynamoDB cannot store"
        found = _json_problem(value, key, 1)
        if found:
            return found
    try:
        size = len(_compact_json(plain).encode("utf-8"))
    except (TypeError, ValueError, RecursionError) as exc:
        return f"parameters are not JSON ({type(exc).__name__})"  # its text may quote a value
    limit = parameters_limit(target.kind)
    if size > limit:
        label = "Lambda" if target.kind == "lambda" else "flow"
        return (
            f"parameters take {size} bytes as JSON, more than the {limit} a {label} target "
            f"allows ({_limit_reason(target.kind)})"
        )
    stored = sum(len(key.encode()) + _dynamodb_size(value) for key, value in plain.items())
    if stored > DYNAMODB_ITEM_LIMIT - DISPATCH_RESERVE:
        return (
            f"parameters take {stored} bytes in DynamoDB, more than the "
            f"{DYNAMODB_ITEM_LIMIT - DISPATCH_RESERVE} the item that records the run allows"
        )
    return None


def _storable_number(value: int | float) -> bool:
    """Whether DynamoDB stores ``value`` as a number exactly: at most 38 significant digits,
    zero or a magnitude from 1E-130 to under 1E126."""
    if isinstance(value, int) and value.bit_length() > _LARGEST_BITS:
        return False  # past 1E126; and str() refuses ints of more than 4,300 digits
    try:
        number = _DYNAMODB_NUMBERS.create_decimal(json.dumps(value))
    except decimal.DecimalException:
        return False
    return not number or _DYNAMODB_SMALLEST <= number.copy_abs() < _DYNAMODB_LARGEST


def _dynamodb_size(value: object) -> int:
    """DynamoDB's size of a value (its documented item size rules, near enough)."""
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, int | float):
        exact = decimal.Decimal(json.dumps(value)).normalize(_EXACT)
        digits = len(exact.as_tuple().digits)
        return (digits + 1) // 2 + 1
    if isinstance(value, list):
        return 3 + sum(_dynamodb_size(item) + 1 for item in value)
    if isinstance(value, dict):
        return 3 + sum(len(str(k).encode()) + _dynamodb_size(v) + 1 for k, v in value.items())
    return 0


def _compact_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# -- YAML, bounded ----------------------------------------------------------------------------

_TIMESTAMP_TAG: Final = "tag:yaml.org,2002:timestamp"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_YAML_TAG: Final = "tag:yaml.org,2002:"
_STR_TAG: Final = _YAML_TAG + "str"


class _Refused(Exception):
    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        line = getattr(mark, "line", None)
        self.line = line + 1 if isinstance(line, int) else None


@dataclass(frozen=True, slots=True)
class _Duplicate:
    mapping: int  # start index of the mapping that holds the key twice
    key: str
    first: int  # lines, from 1
    again: int


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that counts while it composes, so a bomb is refused before it is built.

    Every node counts once, and every alias counts as the whole subtree it repeats (so
    ``&a [*b, *b, ...]`` chains that expand to billions of nodes stop at :data:`MAX_NODES`);
    depth counts mappings and lists (the file's own mapping is level 1), an alias at its full
    depth; an alias inside the node it names (a recursive
    structure, which JSON cannot carry either) is refused. Plain dates stay text.
    """

    yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML reads it from the class
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._reached = 0
        self._nodes = 0
        self._text = 0
        self._weights: dict[str, tuple[int, int, int]] = {}  # anchor -> nodes, text, height
        self._open: set[str] = set()
        self.duplicates: list[_Duplicate] = []

    def _count(self, nodes: int, text: int, mark: Any) -> None:
        self._nodes += nodes
        self._text += text
        if self._nodes > MAX_NODES:
            raise _Refused(
                f"holds more than {MAX_NODES} YAML nodes (each alias counts as what it "
                "repeats): refused as an alias bomb or a file too big to schedule",
                mark,
            )
        if self._text > MAX_EXPANDED_TEXT:
            raise _Refused(
                f"expands to more than {MAX_EXPANDED_TEXT} characters of text (each alias "
                "counts as what it repeats): refused as an alias bomb",
                mark,
            )

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            anchor = event.anchor
            if anchor in self._open:
                raise _Refused(
                    f"alias *{anchor} is inside the node it names (a recursive structure)",
                    event.start_mark,
                )
            weight = self._weights.get(anchor) if anchor is not None else None
            if weight is not None:
                nodes, text, height = weight
                self._count(nodes, text, event.start_mark)
                self._reached = max(self._reached, self._depth + height)
                if self._reached > MAX_DEPTH:
                    raise _Refused(f"nests deeper than {MAX_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        parent_depth = self._depth
        depth = parent_depth + (1 if isinstance(event, CollectionStartEvent) else 0)
        if depth > MAX_DEPTH:
            raise _Refused(f"nests deeper than {MAX_DEPTH} levels", event.start_mark)
        self._depth = depth
        nodes_before, text_before, reached_before = self._nodes, self._text, self._reached
        self._reached = depth
        value = event.value if isinstance(event, ScalarEvent) else None
        self._count(1, len(value) if isinstance(value, str) else 0, event.start_mark)
        anchor = event.anchor
        if isinstance(anchor, str):
            self._open.add(anchor)
        node = super().compose_node(parent, index)
        if isinstance(anchor, str):
            self._open.discard(anchor)
            height = self._reached - parent_depth  # the levels this node adds below its parent
            self._weights[anchor] = (self._nodes - nodes_before, self._text - text_before, height)
        self._reached = max(reached_before, self._reached)
        self._depth = parent_depth
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """A value its tag cannot read (``!!int nope``) is refused naming the tag and the place,
        not quoting the value, which may be a parameter's (and secret): Python's own text
        (``invalid literal for int() with base 10: 'nope'``) would."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, AttributeError, OverflowError, IndexError, KeyError):
            tag = str(node.tag).replace(_YAML_TAG, "!!")
            raise yaml.constructor.ConstructorError(
                None, None, f"a value cannot be read as {tag[:40]}", node.start_mark
            ) from None

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], int] = {}
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != _MERGE_TAG:
                ident = (key.tag, key.value)
                line = key.start_mark.line + 1
                if ident in seen:
                    self.duplicates.append(
                        _Duplicate(node.start_mark.index, key.value, seen[ident], line)
                    )
                else:
                    seen[ident] = line
        return node


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [part for part in (exc.context, exc.problem) if part]
        text = ": ".join(parts) or "unreadable"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            text += f" (line {mark.line + 1}, column {mark.column + 1})"
        if "alias" in text:
            text += "; a value that starts with '*' must be quoted, as in cron: \"* * * * * ?\""
        return text
    return str(exc)


def _compose(text: str, source: str) -> tuple[Node | None, Any, list[_Duplicate]]:
    try:
        loader = _BoundedLoader(text)  # the reader refuses control characters here already
    except yaml.YAMLError as exc:
        raise CronFileError(f"Cron file {source} is not valid YAML: {_yaml_message(exc)}") from None
    try:
        try:
            node = loader.get_single_node()
        except _Refused as exc:
            where = "" if exc.line is None else f" (line {exc.line})"
            raise CronFileError(f"Cron file {source} {exc.message}{where}") from None
        except yaml.YAMLError as exc:
            raise CronFileError(
                f"Cron file {source} is not valid YAML: {_yaml_message(exc)}"
            ) from None
        if node is None:
            return None, None, []
        try:
            data = loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise CronFileError(
                f"Cron file {source} is not valid YAML: {_yaml_message(exc)}"
            ) from None
        except (
            ValueError,
            TypeError,
            AttributeError,
            OverflowError,
            IndexError,
            KeyError,
            RecursionError,
        ) as exc:
            # SafeConstructor lets a few of these out for bad explicit tags (!!int x,
            # !!timestamp x); the file is refused either way.
            raise CronFileError(
                f"Cron file {source} is not valid YAML: a value cannot be read "
                f"({type(exc).__name__}: {exc})"
            ) from None
        return node, data, loader.duplicates
    finally:
        loader.dispose()


def _decode(raw: bytes, source: str) -> str:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CronFileError(
            f"Cron file {source} is not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None


# -- the file ---------------------------------------------------------------------------------

FILE_KEYS: Final = ("jobs", "deferred.start", "leader.election", "misfire.grace", "misfire.max")
JOB_KEYS: Final = (
    "name",
    "cron",
    "service",
    "timezone",
    "parameters",
    "description",
    "resolver",
    "misfire",
    "overlap",
    "timeout",
    "enabled",
)
_REQUIRED: Final = ("name", "cron", "service")
_LIKELY: Final = {
    "schedule": "cron",
    "statement": "cron",
    "expression": "cron",
    "zone": "timezone",
    "tz": "timezone",
    "time_zone": "timezone",
    "time-zone": "timezone",
    "function": "service",
    "target": "service",
    "lambda": "service",
    "flow": "service",
    "params": "parameters",
    "input": "parameters",
    "payload": "parameters",
    "disabled": "enabled",
}
_INVALID_ENTRY: Final = "Invalid job entry#{n}{name} - check name, schedule and service: {reason}"
_ZONE_GUESSES: Final = 20
"""Unknown zones per file that get a spelling suggestion (each compares with ~600 ids): a file of
thousands of bad zones must not make loading it slow."""
_SEARCH_FROM: Final = datetime(1969, 12, 31, tzinfo=UTC)
"""A statement that has no firing after this in its zone never fires (firings start in 1970)."""


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return repr(value)
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}"


def _kind(value: object) -> str:
    """What ``value`` is, without what it holds: for parameters, whose values may be secret."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None or isinstance(value, dict | list):
        return _describe(value)
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def _words(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _suggest(key: object, known: Sequence[str]) -> str | None:
    if not isinstance(key, str):
        return None
    lowered = key.lower()
    if lowered in _LIKELY and _LIKELY[lowered] in known:
        return _LIKELY[lowered]
    if lowered in known:
        return lowered
    close = difflib.get_close_matches(lowered, known, n=1, cutoff=0.6)
    return close[0] if close else None


def _unknown_key(label: str, key: object, known: Sequence[str]) -> str:
    guess = _suggest(key, known)
    shown = printable(key, 40) if isinstance(key, str) else repr(key)[:40]
    if guess:
        return f"{label} key {shown} ignored - did you mean {guess}?"
    return f"{label} key {shown} ignored - the keys are {', '.join(known)}"


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid job name (seed 000's rule, bounded to 64), or None."""
    if not name:
        return "name is empty"
    shown = _quoted(name, MAX_NAME_LENGTH)
    if not set(name) <= _NAME_CHARS:
        return f"name {shown} may hold only letters, digits, '.', '_' and '-'"
    if name[0] in _EDGE or name[-1] in _EDGE:
        return f"name {shown} must not start or end with '.', '_' or '-'"
    if ".." in name:
        return f"name {shown} must not hold '..'"
    if len(name) > MAX_NAME_LENGTH:
        return f"name {_quoted(name, 20)} is longer than {MAX_NAME_LENGTH} characters"
    return None


@dataclass(slots=True)
class _Entry:
    """What reading one entry found."""

    number: int
    name: str | None  # the entry's name when a message may show it (readable_name)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings reported whether it loads or not
    warnings: list[str] = field(default_factory=list)  # warnings reported when it loads
    job: Job | None = None

    @property
    def label(self) -> str:
        """How its warnings name the entry: its name, or ``entry#<n>``."""
        return self.name or f"entry#{self.number}"

    def invalid(self) -> str:
        """The error line that skips the entry."""
        shown = "" if self.name is None else f" ({self.name})"
        return _INVALID_ENTRY.format(n=self.number, name=shown, reason="; ".join(self.reasons))


def _quoted(text: str, limit: int) -> str:
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def readable_name(name: object) -> str | None:
    """``name`` when a message may show it as the entry's name: text of 1 to 64 of the
    characters a job name may hold. Anything else (a number, a control character, a line of
    someone else's log format, a megabyte) is shown only quoted and cut, in the reason."""
    if isinstance(name, str) and 0 < len(name) <= MAX_NAME_LENGTH and set(name) <= _NAME_CHARS:
        return name
    return None


@dataclass(slots=True)
class _Memo:
    """What one load works out once: parsed statements, never-firing checks, zone guesses."""

    statements: dict[str, CronExpression | str] = field(default_factory=dict)
    silent: dict[tuple[str, str], bool] = field(default_factory=dict)
    zone_guesses: dict[str, str | None] = field(default_factory=dict)

    def parse(self, statement: str) -> CronExpression | str:
        """The parsed statement, or the reason it is refused (with its Quartz form when it is
        a Unix cron line)."""
        found = self.statements.get(statement)
        if found is None:
            try:
                found = parse(statement)
            except CronSyntaxError as exc:
                hint = unix_hint(statement)
                found = str(exc) if hint is None else f"{exc} - {hint}"
            self.statements[statement] = found
        return found

    def never_fires(self, expression: CronExpression, zone: str, tz: ZoneInfo) -> bool:
        """Whether ``expression`` selects no time of ``tz`` in 1970-2999 (30 February)."""
        key = (expression.statement, zone)
        found = self.silent.get(key)
        if found is None:
            found = self.silent[key] = expression.next_after(_SEARCH_FROM, tz) is None
        return found

    def unknown_zone(self, zone: str) -> str:
        """The reason for an unknown zone, with the id it most likely meant: past
        :data:`_ZONE_GUESSES` different unknown zones, only a slip of case or a place's name."""
        if zone in self.zone_guesses:
            guess = self.zone_guesses[zone]
        else:
            fuzzy = len(self.zone_guesses) < _ZONE_GUESSES
            guess = self.zone_guesses[zone] = suggest_zone(zone, fuzzy=fuzzy)
        reason = f"unknown time zone {_quoted(zone, 64)}"
        return reason if guess is None else f"{reason} - did you mean {guess}?"


def _read_entry(
    number: int,
    raw: object,
    default_zone: str,
    duplicates: Sequence[_Duplicate],
    memo: _Memo,
) -> _Entry:
    if not isinstance(raw, dict):
        entry = _Entry(number, None)
        entry.reasons.append(f"the entry is {_describe(raw)}, not a mapping of job keys")
        return entry
    name = raw.get("name")
    entry = _Entry(number, readable_name(name))
    label = f"Job {entry.label}"
    reasons = entry.reasons
    for key in raw:
        if key not in JOB_KEYS:
            entry.notes.append(_unknown_key(label, key, JOB_KEYS))
    missing = [key for key in _REQUIRED if raw.get(key) is None]
    if missing:
        reasons.append(f"missing {_words(missing)}")

    if name is not None:
        if not isinstance(name, str):
            reasons.append(f"name must be text, not {_describe(name)}: quote it")
        else:
            found = name_problem(name)
            if found:
                reasons.append(found)

    statement = raw.get("cron")
    expression: CronExpression | None = None
    if statement is not None:
        if not isinstance(statement, str):
            reasons.append(f"cron must be text, not {_describe(statement)}: quote it")
        else:
            parsed_statement = memo.parse(statement)
            if isinstance(parsed_statement, CronExpression):
                expression = parsed_statement
            else:
                reasons.append(parsed_statement)

    service = raw.get("service")
    target: Target | None = None
    if service is not None:
        if not isinstance(service, str):
            reasons.append(f"service must be text, not {_describe(service)}")
        else:
            parsed = parse_service(service)
            if isinstance(parsed, Target):
                target = parsed
            else:
                reasons.append(parsed)

    zone = raw.get("timezone")
    tz: ZoneInfo | None = None
    if zone is None:
        zone = default_zone
    if not isinstance(zone, str):
        reasons.append(f"timezone must be text, not {_describe(zone)}")
    else:
        try:
            tz = get_zone(zone)
        except UnknownTimeZoneError:
            reasons.append(memo.unknown_zone(zone))
        else:
            if is_fixed_offset(zone):
                entry.warnings.append(
                    f"{label} time zone {zone} never follows daylight saving - name a region "
                    "such as America/New_York"
                )

    parameters: dict[str, Any] = {}
    raw_parameters = raw.get("parameters")
    if raw_parameters is not None:
        if not isinstance(raw_parameters, dict):
            reasons.append(
                f"parameters must be a mapping of keys to values, not {_kind(raw_parameters)}"
            )
        else:
            for key, value in raw_parameters.items():
                if not isinstance(key, str):
                    reasons.append(f"parameter key {_describe(key)} is not text: quote it")
                elif key.startswith("_"):
                    entry.warnings.append(
                        f"{label} parameter {printable(key, 40)} ignored - a key that starts "
                        "with '_' is reserved for the system"
                    )
                else:
                    parameters[key] = value

    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        reasons.append(f"description must be text, not {_describe(description)}")

    misfire = raw.get("misfire", "fire_now")
    if misfire is None:
        misfire = "fire_now"
    if misfire not in MISFIRE_POLICIES:
        reasons.append(f"misfire {_describe(misfire)} is not one of {_words(MISFIRE_POLICIES)}")

    overlap = raw.get("overlap", "allow")
    if overlap is None:
        overlap = "allow"
    if overlap not in OVERLAP_POLICIES:
        reasons.append(f"overlap {_describe(overlap)} is not one of {_words(OVERLAP_POLICIES)}")

    timeout = raw.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= MAX_TIMEOUT
    ):
        reasons.append(
            f"timeout must be a whole number of seconds from 1 to {MAX_TIMEOUT}, not "
            f"{_describe(timeout)}"
        )

    enabled = raw.get("enabled")
    if enabled is None:
        enabled = True
    if not isinstance(enabled, bool):
        reasons.append(f"enabled must be true or false, not {_describe(enabled)}")

    if target is not None and isinstance(raw_parameters, dict):
        found = check_parameters_fit(target, parameters)
        if found:
            reasons.append(found)

    for duplicate in duplicates:
        reasons.append(
            f"key {duplicate.key} appears twice (lines {duplicate.first} and {duplicate.again})"
        )

    if reasons:
        return entry
    assert isinstance(name, str) and isinstance(statement, str) and isinstance(zone, str)  # nosec B101 # type narrowing: no reason left means each is set
    assert expression is not None and tz is not None and target is not None  # nosec B101 # type narrowing, as above
    if memo.never_fires(expression, zone, tz):
        entry.warnings.append(
            f"{label} never fires - {statement} selects no time in {zone} from 1970 to 2999: "
            "check its day, month and year fields"
        )
    entry.job = Job(
        name=name,
        statement=statement,
        expression=expression,
        zone=zone,
        tz=tz,
        target=target,
        parameters=parameters,
        description=cast("str | None", description),
        misfire=cast("Misfire", misfire),
        overlap=cast("Overlap", overlap),
        timeout=cast("int", timeout)
        if timeout is not None
        else (DEFAULT_LAMBDA_TIMEOUT if target.kind == "lambda" else DEFAULT_FLOW_TIMEOUT),
        enabled=enabled,
        entry=number,
    )
    return entry


def _setting_bool(data: dict[Any, Any], key: str, source: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise CronFileError(
            f"Cron file {source}: {key} must be true or false, not {_describe(value)}"
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
            f"not {_describe(value)}"
        )
    return value


def _jobs_node(root: Node) -> list[Node]:
    if isinstance(root, MappingNode):
        for key, value in root.value:
            if (
                isinstance(key, ScalarNode)
                and key.tag == _STR_TAG
                and key.value == "jobs"
                and isinstance(value, SequenceNode)
            ):
                return list(value.value)
    return []


def load(
    text: str | bytes, *, source: str = "<string>", default_timezone: str = DEFAULT_TIMEZONE
) -> CronFile:
    """Read a cron file. A whole-file problem raises :class:`CronFileError`; a bad entry is
    skipped and reported in :attr:`CronFile.problems`."""
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    if len(raw) > MAX_FILE_BYTES:
        raise CronFileError(
            f"Cron file {source} is {len(raw)} bytes, more than the {MAX_FILE_BYTES} allowed"
        )
    version = hashlib.sha256(raw).hexdigest()
    document = text if isinstance(text, str) else _decode(raw, source)
    if not document.strip():
        raise CronFileError(f"Cron file {source} is empty: it needs a jobs list")
    try:
        get_zone(default_timezone)
    except UnknownTimeZoneError:
        guess = suggest_zone(default_timezone)
        raise CronFileError(
            f"Cron file {source} cannot be read in the default time zone "
            f"{_quoted(default_timezone, 64)}: it is unknown (DEFAULT_TIMEZONE)"
            + ("" if guess is None else f" - did you mean {guess}?")
        ) from None

    root, data, duplicates = _compose(document, source)
    if root is None:
        raise CronFileError(f"Cron file {source} is empty: it needs a jobs list")
    if not isinstance(data, dict):
        raise CronFileError(
            f"Cron file {source} must be a mapping with a jobs list, not {_describe(data)}"
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
            f"Cron file {source}: jobs must be a list of job entries, not {_describe(jobs)}{hint}"
        )

    deferred_start = _setting_bool(data, "deferred.start", source)
    leader_election = _setting_bool(data, "leader.election", source)
    misfire_grace = _setting_int(
        data, "misfire.grace", source, DEFAULT_MISFIRE_GRACE, 0, MAX_MISFIRE_GRACE, " of seconds"
    )
    misfire_max = _setting_int(
        data, "misfire.max", source, DEFAULT_MISFIRE_MAX, 1, MAX_MISFIRE_MAX, ""
    )

    problems: list[Problem] = [
        Problem("warning", _unknown_key("Cron file", key, FILE_KEYS))
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

    entry_nodes = _jobs_node(root)
    spans = [(node.start_mark.index, node.end_mark.index) for node in entry_nodes]
    by_entry: dict[int, list[_Duplicate]] = {}
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

    names: dict[str, list[int]] = {}
    for number, raw_entry in enumerate(jobs, start=1):
        if isinstance(raw_entry, dict) and isinstance(raw_entry.get("name"), str):
            names.setdefault(raw_entry["name"], []).append(number)

    loaded: list[Job] = []
    memo = _Memo()
    for number, raw_entry in enumerate(jobs, start=1):
        entry = _read_entry(number, raw_entry, default_timezone, by_entry.get(number, ()), memo)
        if isinstance(raw_entry, dict):
            name = raw_entry.get("name")
            sharing = names.get(name, []) if isinstance(name, str) else []
            if isinstance(name, str) and len(sharing) > 1:
                numbers = _words([f"#{n}" for n in sharing])
                entry.reasons.append(
                    f"name {_quoted(name, MAX_NAME_LENGTH)} is used by entries {numbers} - "
                    "every entry with this name is skipped"
                )
                entry.job = None
        problems.extend(Problem("warning", note, number) for note in entry.notes)
        if entry.reasons:
            problems.append(Problem("error", entry.invalid(), number))
            continue
        problems.extend(Problem("warning", warning, number) for warning in entry.warnings)
        assert entry.job is not None  # nosec B101 # type narrowing: no reason means a job
        loaded.append(entry.job)

    return CronFile(
        jobs=tuple(loaded),
        source=source,
        deferred_start=deferred_start,
        leader_election=leader_election,
        misfire_grace=misfire_grace,
        misfire_max=misfire_max,
        problems=tuple(problems),
        version=version,
        entries=len(jobs),
    )
