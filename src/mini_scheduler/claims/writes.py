"""A conditional write in logical fields (:mod:`.records`' names), as every transition builds one
(:mod:`.transitions`) and each backend translates it into its own request: what it expects of
the record as stored (:class:`Expect`), the fields it sets and the counters it adds to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import datetime
from typing import Any, TypeVar

from mini_scheduler.claims.records import JobState, RunRecord

__all__ = ["Expect", "Write", "applied"]


@dataclass(frozen=True, slots=True)
class Expect:
    """What a conditional write requires of the record as stored: each field of ``one_of``
    holds one of its values (None: the field is absent), each of ``at_most`` is present and at
    or before its instant."""

    one_of: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    at_most: Mapping[str, datetime] = field(default_factory=dict)

    def holds(self, record: RunRecord | JobState) -> bool:
        """Whether ``record`` (the memory store's) meets the expectation."""
        for name, values in self.one_of.items():
            if getattr(record, name) not in values:
                return False
        for name, bound in self.at_most.items():
            value = getattr(record, name)
            if value is None or value > bound:
                return False
        return True


@dataclass(frozen=True, slots=True)
class Write:
    """One conditional write in logical fields: the fields it ``sets`` (None: the field goes),
    the counters it ``adds`` to, if the record stored meets ``expect``."""

    sets: Mapping[str, Any]
    expect: Expect = field(default_factory=Expect)
    adds: Mapping[str, int] = field(default_factory=dict)


Record = TypeVar("Record", RunRecord, JobState)


def applied(record: Record, write: Write) -> Record:
    """``record`` after ``write`` (the fields its type does not hold are the store's alone)."""
    changes: dict[str, Any] = {}
    for attribute in fields(record):
        if attribute.name not in write.sets:
            continue
        value = write.sets[attribute.name]
        if value is None and attribute.default_factory is not MISSING:
            value = attribute.default_factory()
        elif value is None and attribute.default is not MISSING:
            value = attribute.default
        changes[attribute.name] = value
    return replace(record, **changes)
