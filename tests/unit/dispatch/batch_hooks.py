"""What the batched dispatchers' tests share: firings to dispatch, an SQS queue's messages
read back, and a client's requests of one operation seen and bent through botocore's event
hooks (the entries each request carried, a request made to raise, an answer rewritten so that
chosen entries failed: moto never fails an entry of a batch itself)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

_ENTRIES = {
    "SendMessageBatch": "Entries",
    "PublishBatch": "PublishBatchRequestEntries",
    "PutEvents": "Entries",
    "SendMessage": None,
    "Publish": None,
    "GetQueueUrl": None,
}


class Requests:
    """Each ``operation`` request ``client`` makes: ``params`` (as the caller passed them) and
    ``entries`` (the batch's, by request). ``fail(request, position, ...)`` makes that entry of
    that request (both from 0) answer as failed; ``raise_on(request, code)`` makes that request
    raise a ClientError with ``code``."""

    def __init__(self, client: Any, operation: str) -> None:
        self.operation = operation
        self.params: list[dict[str, Any]] = []
        self._failures: dict[int, dict[int, dict[str, Any]]] = {}
        self._raises: dict[int, str] = {}
        service = client.meta.service_model.service_id.hyphenize()
        events = client.meta.events
        events.register(f"before-parameter-build.{service}.{operation}", self._record)
        events.register(f"before-call.{service}.{operation}", self._raise)
        events.register(f"after-call.{service}.{operation}", self._rewrite)

    @property
    def entries(self) -> list[list[dict[str, Any]]]:
        key = _ENTRIES[self.operation]
        return [list(params[key]) for params in self.params] if key else []

    def fail(self, request: int, position: int, **failure: Any) -> None:
        self._failures.setdefault(request, {})[position] = failure

    def raise_on(self, request: int, code: str) -> None:
        self._raises[request] = code

    def _record(self, params: dict[str, Any], **_: Any) -> None:
        self.params.append(dict(params))

    def _raise(self, **_: Any) -> None:
        code = self._raises.get(len(self.params) - 1)
        if code is not None:
            error = {"Error": {"Code": code, "Message": f"{code} (injected)"}}
            raise ClientError(error, self.operation)  # type: ignore[arg-type]

    def _rewrite(self, parsed: dict[str, Any], **_: Any) -> None:
        number = len(self.params) - 1
        for position, failure in self._failures.get(number, {}).items():
            if self.operation == "PutEvents":
                parsed["Entries"][position] = failure
                parsed["FailedEntryCount"] = parsed.get("FailedEntryCount", 0) + 1
                continue
            entry_id = self.entries[number][position]["Id"]
            parsed["Successful"] = [e for e in parsed["Successful"] if e["Id"] != entry_id]
            parsed.setdefault("Failed", []).append({"Id": entry_id, **failure})


def firing(index: int, job: str = "nightly-report") -> tuple[str, dict[str, Any]]:
    firing_id = f"{job}@2026-12-04T03:{index // 60:02d}:{index % 60:02d}Z"
    return firing_id, {"job": job, "firingId": firing_id, "attempt": 1, "parameters": {}}


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def received(sqs: Any, url: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    while batch := sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages"):
        messages += batch
        for message in batch:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return messages
