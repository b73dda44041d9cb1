"""Audit records in a CloudWatch Logs group: one JSON event per record, in a stream per UTC day
(``audit/YYYY-MM-DD``, made on its first record). PutLogEvents adds events and no call changes
one; the group's retention (the template's ``AuditRetentionDays``) drops them.

PutLogEvents' rules that matter here: no sequence token (ignored since 2023: writers may share
a stream), an event at most 2 hours in the future and 14 days in the past (a record is written
as its action is done), and an event it rejects is said in ``rejectedLogEventsInfo``, not as an
error: that is an :class:`~mini_scheduler.errors.AuditError` here too. A read is FilterLogEvents
over the time range with a JSON filter pattern on the job, and every record filtered again
here (an emulator may ignore the pattern; an actor matches its ARN's last part too).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from mini_scheduler.audit.base import READ_LIMIT, AuditRecord, newest_first
from mini_scheduler.errors import AuditError, describe_aws_error

MAX_EVENTS_READ: Final = 20_000
"""The most events one read goes through (pages of FilterLogEvents): past it, the read says so
rather than answer a partial trail as if it were whole."""
_PLAIN = re.compile(r"[A-Za-z0-9._@:/-]{1,512}")  # a value safe inside a filter pattern's quotes


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


class CloudWatchAuditLog:
    """An :class:`~mini_scheduler.audit.base.AuditLog` on the log group ``group``; the
    ``logs`` client is made on first use (``client`` a client, or a function that makes one)."""

    def __init__(self, group: str, client: Any | Callable[[], Any]) -> None:
        self.name = group
        self._client = client
        self._streams: set[str] = set()  # the streams this one made or wrote

    def _logs(self) -> Any:
        if callable(self._client) and not hasattr(self._client, "put_log_events"):
            self._client = self._client()
        return self._client

    def append(self, record: AuditRecord) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        stream = f"audit/{record.at.strftime('%Y-%m-%d')}"
        event = {"timestamp": _millis(record.at), "message": record.to_line()}
        try:
            answer = self._put(stream, event)
        except (BotoCoreError, ClientError) as exc:
            raise AuditError(
                f"audit record of {record.action} not written to log group {self.name} - "
                f"{describe_aws_error(exc)}"
            ) from exc
        rejected = answer.get("rejectedLogEventsInfo") or {}
        if rejected:
            raise AuditError(
                f"audit record of {record.action} rejected by log group {self.name}: "
                f"{', '.join(sorted(rejected))} (its time {record.at.isoformat()} is outside "
                "what PutLogEvents takes: 14 days back to 2 hours ahead)"
            )

    def _put(self, stream: str, event: dict[str, Any]) -> Any:
        from botocore.exceptions import ClientError

        logs = self._logs()
        if stream not in self._streams:
            try:
                logs.create_log_stream(logGroupName=self.name, logStreamName=stream)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ResourceAlreadyExistsException":
                    raise
            self._streams.add(stream)
        return logs.put_log_events(logGroupName=self.name, logStreamName=stream, logEvents=[event])

    def read(
        self,
        since: datetime,
        until: datetime,
        *,
        job: str | None = None,
        actor: str | None = None,
        limit: int = READ_LIMIT,
    ) -> list[AuditRecord]:
        from botocore.exceptions import BotoCoreError, ClientError

        request: dict[str, Any] = {
            "logGroupName": self.name,
            "startTime": _millis(since),
            "endTime": _millis(until),
        }
        if job is not None and _PLAIN.fullmatch(job):
            request["filterPattern"] = f'{{ $.job = "{job}" }}'
        try:
            lines = self._lines(request)
        except (BotoCoreError, ClientError) as exc:
            raise AuditError(
                f"cannot read the audit trail in log group {self.name} - {describe_aws_error(exc)}"
            ) from exc
        records = [r for r in map(AuditRecord.from_line, lines) if r is not None]
        kept = [r for r in records if since <= r.at < until and r.matches(job=job, actor=actor)]
        return newest_first(kept, limit)

    def _lines(self, request: dict[str, Any]) -> list[str]:
        """Every event's message FilterLogEvents answers, page after page."""
        lines: list[str] = []
        token: str | None = None
        while True:
            paging = {"nextToken": token} if token else {}
            page = self._logs().filter_log_events(**request, **paging)
            lines.extend(str(e.get("message", "")) for e in page.get("events", []))
            if len(lines) > MAX_EVENTS_READ:
                raise AuditError(
                    f"more than {MAX_EVENTS_READ} audit records in log group {self.name} in that "
                    "time range: narrow it (--since, --until) or name a --job"
                )
            token = page.get("nextToken")
            if not token:
                return lines
