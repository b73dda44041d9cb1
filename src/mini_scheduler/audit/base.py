"""The audit trail: one record per operator action (run, rerun, pause, resume, the active
environment, a runtime schedule created or deleted, a backfill), written after the action
succeeded, never changed nor deleted afterwards, and read back newest first.

The protocol is :class:`AuditLog`: ``append`` adds one record, ``read`` returns those of a
time range (``since`` included, ``until`` excluded), newest first, optionally of one job or one
actor, at most ``limit``. Backends: :mod:`.cloudwatch` (a CloudWatch Logs group: the API has no
call that changes an event, and its retention is the group's) and :mod:`.memory` (tests, make
run without one). The contract is tests/contract/audit/test_contract.py, run on both.

Who a record names: ``operator`` is the name the caller gave (``--operator``, or the last part
of its ARN), ``identity`` the caller's identity as the caller told it (the CLI's STS
GetCallerIdentity ARN; the console's or make run's local name), and ``via`` who wrote the
record: ``cli``, ``console``, or the ticker function's ARN from its invocation context. An
identity carried in an event is what the caller said: the invoke itself is authorized by IAM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from mini_scheduler.errors import EventError
from mini_scheduler.instants import iso_millis, parse_instant

VERSION: Final = 1
"""The record's version (``v``): a reader skips a record of a later one."""
ACTIONS: Final = (
    "run",
    "rerun",
    "pause",
    "resume",
    "environment",
    "schedule.create",
    "schedule.delete",
    "backfill",
)
"""What an operator did, as a record names it (``environment``: the active environment set,
by a failover or a ticker's admin event)."""
MAX_REASON: Final = 500
"""The longest ``--reason`` kept (characters)."""
MAX_IDENTITY: Final = 2048
"""The longest identity (an ARN is at most 2048 characters)."""
MAX_STATE_BYTES: Final = 32 * 1024
"""The most a record's before and after states take in JSON; larger, each is replaced by a
note of its size (an event may be 256 KB; a record stays far below it)."""
READ_LIMIT: Final = 1000
"""The most records one read returns."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_reason(reason: Any) -> str | None:
    """An operator's ``--reason``: None, or text of 1-500 characters without control
    characters. EventError naming ``reason`` otherwise."""
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise EventError('reason must be text (why the operator acts), e.g. "incident 4711"')
    text = reason.strip()
    if len(text) > MAX_REASON:
        raise EventError(f"reason is {len(text)} characters long: at most {MAX_REASON}")
    if _CONTROL.search(text):
        raise EventError("reason must be one line of text: no control characters")
    return text


def check_identity(identity: Any) -> str | None:
    """A caller's identity as told (an ARN, a local name): None, or one line of at most 2048
    characters. EventError naming ``identity`` otherwise."""
    if identity is None:
        return None
    if not isinstance(identity, str) or not identity.strip() or len(identity) > MAX_IDENTITY:
        raise EventError(f"identity must be text of 1-{MAX_IDENTITY} characters (an ARN)")
    if _CONTROL.search(identity):
        raise EventError("identity must be one line of text: no control characters")
    return identity.strip()


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One operator action: who, what, when, the state before and after, why, and where."""

    at: datetime  # aware UTC: when the action was done
    action: str  # one of ACTIONS
    operator: str  # the operator's name, as given
    region: str
    stack: str | None = None
    identity: str | None = None  # the caller's identity, as the caller told it
    via: str | None = None  # who wrote the record: cli, console, local, or a function's ARN
    job: str | None = None
    subject: str | None = None  # a firing id, an environment name: what the action was about
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    reason: str | None = None
    version: int = VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)  # keys of a later version, kept

    @property
    def actor(self) -> str:
        """Who, in one word: the identity when told, else the operator's name."""
        return self.identity or self.operator

    def matches(self, *, job: str | None = None, actor: str | None = None) -> bool:
        """Whether the record is ``job``'s and ``actor``'s (the operator's name, or the
        identity, or its last part): None matches any."""
        if job is not None and self.job != job:
            return False
        if actor is None:
            return True
        names = {self.operator, self.identity, (self.identity or "").rsplit("/", 1)[-1]}
        return actor in names

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "v": self.version,
            "at": iso_millis(self.at),
            "action": self.action,
            "operator": self.operator,
            "region": self.region,
        }
        optional = (
            ("stack", self.stack),
            ("identity", self.identity),
            ("via", self.via),
            ("job", self.job),
            ("subject", self.subject),
            ("before", self.before),
            ("after", self.after),
            ("reason", self.reason),
        )
        out.update((key, value) for key, value in optional if value is not None)
        return {**self.extra, **out}

    def to_line(self) -> str:
        """The record as one JSON line, its states bounded (:data:`MAX_STATE_BYTES`)."""
        bounded = replace(self, before=_bounded(self.before), after=_bounded(self.after))
        return json.dumps(bounded.to_json(), sort_keys=True, separators=(",", ":"), default=str)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditRecord:
        """A record read back; ValueError for one that is not a record of this version."""
        version = data.get("v")
        if not isinstance(version, int) or version > VERSION:
            raise ValueError(f"not an audit record of version {VERSION}: v={version!r}")
        known = {"v", "at", "action", "operator", "region", "stack", "identity", "via", "job"}
        known |= {"subject", "before", "after", "reason"}
        return cls(
            at=parse_instant(str(data["at"])).astimezone(UTC),
            action=str(data["action"]),
            operator=str(data["operator"]),
            region=str(data["region"]),
            stack=data.get("stack"),
            identity=data.get("identity"),
            via=data.get("via"),
            job=data.get("job"),
            subject=data.get("subject"),
            before=data.get("before"),
            after=data.get("after"),
            reason=data.get("reason"),
            version=version,
            extra={k: v for k, v in data.items() if k not in known},
        )

    @classmethod
    def from_line(cls, line: str) -> AuditRecord | None:
        """A record from its JSON line; None for a line that is not one (skipped)."""
        try:
            data = json.loads(line)
            return cls.from_json(data) if isinstance(data, Mapping) else None
        except (ValueError, KeyError, TypeError):
            return None


def _bounded(state: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if state is None:
        return None
    size = len(json.dumps(state, default=str).encode())
    if size <= MAX_STATE_BYTES:
        return state
    return {"truncated": True, "bytes": size}


class AuditLog(Protocol):
    """Where audit records are kept: added, read, never changed nor deleted."""

    name: str  # what it is, for messages: a log group's name, "memory"

    def append(self, record: AuditRecord) -> None:
        """Add ``record``; AuditError naming why when it was not kept."""
        ...

    def read(
        self,
        since: datetime,
        until: datetime,
        *,
        job: str | None = None,
        actor: str | None = None,
        limit: int = READ_LIMIT,
    ) -> list[AuditRecord]:
        """The records of ``[since, until)``, of ``job`` and ``actor`` when given (see
        :meth:`AuditRecord.matches`), newest first, at most ``limit``; AuditError when the
        store cannot be read."""
        ...


def newest_first(records: list[AuditRecord], limit: int) -> list[AuditRecord]:
    """``records`` newest first (ties by action and subject, so every backend agrees)."""
    ordered = sorted(records, key=lambda r: (r.at, r.action, r.subject or ""), reverse=True)
    return ordered[: max(0, limit)]
