"""Faults injected at the HTTP level, through botocore's own event system.

A handler registered first on ``before-send.<service id>.<Operation>`` of the boto3 Session
that the scheduler's :class:`~mini_scheduler.aws.Clients` uses answers an attempt with the
response AWS itself would send: the status, the headers and the body in the service's protocol.
botocore then parses it, decides whether to retry (and how long to back off) exactly as it would
in production; our code sees only what the SDK hands it after its retries.

How botocore reads each protocol (botocore/parsers.py):

* JSON (DynamoDB, SSM, Step Functions): the error code is the ``__type`` of the body, after the
  last ``#`` (``com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException``);
  the message is ``message`` (or ``Message``).
* REST-JSON (Lambda): the code is the ``x-amzn-ErrorType`` header, before any ``:``; the body
  carries the message and the modeled members (``Reason``, ``Type``).
* REST-XML (S3): ``<Error><Code>…</Code><Message>…</Message></Error>``.

botocore's retry rules (botocore/retries/standard.py) then apply: a throttling code
(``ThrottlingException``, ``ProvisionedThroughputExceededException``, ``TooManyRequestsException``,
``SlowDown``…) or a 500/502/503/504 is retried; anything else (``AccessDenied``) is not.

``before-send`` is emitted to every handler, not only until one answers, and moto registers its
own (``BotocoreStubber``) on it: after ours has answered, moto's would still apply the request
to its backend (start the execution that AWS refused). An attempt we fail is therefore pointed
at an address no backend serves before moto sees it; botocore builds a new request for each
attempt, so only the refused attempt is affected.
"""

from __future__ import annotations

import io
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import boto3
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.compat import HTTPHeaders
from botocore.httpsession import URLLib3Session

from mini_scheduler.aws import client_config

# The operations the scheduler calls, as botocore names their events (service id, hyphenized).
OPERATIONS = (
    "dynamodb.BatchExecuteStatement",
    "dynamodb.BatchGetItem",
    "dynamodb.BatchWriteItem",
    "dynamodb.PutItem",
    "dynamodb.TransactWriteItems",
    "dynamodb.UpdateItem",
    "dynamodb.Query",
    "dynamodb.GetItem",
    "ssm.GetParameter",
    "lambda.Invoke",
    "sfn.StartExecution",
    "s3.GetObject",
)
_NOWHERE = "https://fault-injected.invalid/"


def sdk_attempts(service: str = "dynamodb") -> int:
    """How many attempts botocore makes for one call with the scheduler's client config
    (``aws.client_config``): the first and its retries."""
    client = boto3.session.Session().client(
        service,  # type: ignore[call-overload]
        region_name="us-east-1",
        config=client_config(),
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    try:
        return int(client.meta.config.retries["total_max_attempts"])
    finally:
        client.close()


@dataclass(frozen=True)
class Fault:
    """One HTTP answer, as the service would send it."""

    code: str
    status: int
    headers: dict[str, str]
    body: bytes

    def response(self, url: str) -> AWSResponse:
        headers = HTTPHeaders()
        for name, value in self.headers.items():
            headers[name] = value
        return AWSResponse(url, self.status, headers, _Raw(self.body))


class _Raw(io.BytesIO):
    """What botocore reads a response body from (``stream()``, as urllib3 offers it)."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        contents = self.read()
        while contents:
            yield contents
            contents = self.read()


def _request_id() -> str:
    return str(uuid.uuid4())


def dynamodb_error(code: str, message: str, *, status: int = 400) -> Fault:
    """DynamoDB (JSON 1.0): ``__type`` names the code with the service's namespace."""
    namespace = (
        "com.amazon.coral.availability"
        if code == "ThrottlingException"
        else "com.amazonaws.dynamodb.v20120810"
    )
    body = json.dumps({"__type": f"{namespace}#{code}", "message": message}).encode()
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": _request_id()}
    return Fault(code, status, headers, body)


def json_error(code: str, message: str, *, status: int = 400, version: str = "1.1") -> Fault:
    """SSM (JSON 1.1) and Step Functions (JSON 1.0): a bare ``__type``."""
    body = json.dumps({"__type": code, "message": message}).encode()
    headers = {
        "Content-Type": f"application/x-amz-json-{version}",
        "x-amzn-RequestId": _request_id(),
    }
    return Fault(code, status, headers, body)


def lambda_error(code: str, status: int, body: dict[str, Any]) -> Fault:
    """Lambda (REST-JSON): the code travels in ``x-amzn-ErrorType``."""
    headers = {
        "Content-Type": "application/json",
        "x-amzn-ErrorType": code,
        "x-amzn-RequestId": _request_id(),
    }
    return Fault(code, status, headers, json.dumps(body).encode())


def s3_error(code: str, message: str, status: int) -> Fault:
    """S3 (REST-XML)."""
    request_id = uuid.uuid4().hex[:16].upper()
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        f"<RequestId>{request_id}</RequestId><HostId>fault-injected</HostId></Error>"
    ).encode()
    headers = {
        "Content-Type": "application/xml",
        "x-amz-request-id": request_id,
        "x-amz-id-2": "fault-injected",
    }
    return Fault(code, status, headers, body)


# The faults of issue 7, each in its service's real shape.
PROVISIONED_THROUGHPUT = dynamodb_error(
    "ProvisionedThroughputExceededException",
    "The level of configured provisioned throughput for the table was exceeded. "
    "Consider increasing your provisioning level with the UpdateTable API.",
)
DYNAMODB_THROTTLING = dynamodb_error(
    "ThrottlingException", "Throughput exceeds the current capacity for one or more global indexes."
)
DYNAMODB_INTERNAL = dynamodb_error("InternalServerError", "Internal server error", status=500)
LAMBDA_TOO_MANY_REQUESTS = lambda_error(
    "TooManyRequestsException",
    429,
    {
        "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
        "Type": "User",
        "message": "Rate Exceeded.",
    },
)
LAMBDA_SERVICE = lambda_error(
    "ServiceException", 500, {"Type": "Service", "message": "An internal error occurred."}
)
SFN_THROTTLING = json_error("ThrottlingException", "Rate exceeded", version="1.0")
SSM_THROTTLING = json_error("ThrottlingException", "Rate exceeded")
SSM_INTERNAL = json_error("InternalServerError", "An internal error occurred.", status=500)
S3_SLOW_DOWN = s3_error("SlowDown", "Please reduce your request rate.", 503)
S3_UNAVAILABLE = s3_error("ServiceUnavailable", "Service is unable to handle request.", 503)
S3_ACCESS_DENIED = s3_error("AccessDenied", "Access Denied", 403)

Match = Callable[[AWSPreparedRequest], bool]


@dataclass
class _Plan:
    fault: Fault
    remaining: int | None  # None: every matching attempt
    match: Match | None
    deliver: bool  # the request reaches the service; only its answer is lost


StatementMatch = Callable[[dict[str, Any]], bool]


@dataclass
class _StatementPlan:
    """A statement of a BatchExecuteStatement refused inside a 200 answer, as DynamoDB refuses
    one it throttled: the others go to the table, and its answer is ``code``."""

    code: str
    message: str
    remaining: int | None
    match: StatementMatch


@dataclass
class Faults:
    """Faults for the clients of one boto3 Session. Register before the clients are made:
    a client copies the session's handlers when it is created."""

    session: boto3.session.Session
    attempts: Counter[str] = field(default_factory=Counter)  # every attempt sent, by operation
    injected: Counter[str] = field(default_factory=Counter)  # attempts answered with a fault
    delivered: list[tuple[str, int, bytes]] = field(default_factory=list)  # what was lost
    _http: URLLib3Session = field(default_factory=URLLib3Session)
    _plans: dict[str, list[_Plan]] = field(default_factory=dict)
    _statement_plans: list[_StatementPlan] = field(default_factory=list)
    statements: Counter[str] = field(default_factory=Counter)  # statements refused, by code
    sent: list[list[dict[str, Any]]] = field(default_factory=list)  # each batch's statements
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        for operation in OPERATIONS:
            self.session.events.register_first(
                f"before-send.{operation}",
                cast("Callable[..., None]", self._answer),  # it answers: botocore allows it
                unique_id=f"fault-{operation}",
            )

    def inject(
        self,
        operation: str,
        fault: Fault,
        *,
        times: int | None = None,
        match: Match | None = None,
        deliver: bool = False,
    ) -> None:
        """Answer the next ``times`` attempts of ``operation`` (all, when None) that ``match``
        selects with ``fault``. With ``deliver`` the request is sent first and the service acts
        on it: only its answer is replaced (a write whose acknowledgement was lost)."""
        if operation not in OPERATIONS:
            raise ValueError(f"{operation} is not one of {OPERATIONS}")
        with self._lock:
            self._plans.setdefault(operation, []).append(_Plan(fault, times, match, deliver))

    def refuse_statements(
        self,
        code: str,
        match: StatementMatch,
        *,
        times: int | None = None,
        message: str = "Throughput exceeds the current capacity of your table or index.",
    ) -> None:
        """Refuse the statements of a BatchExecuteStatement that ``match`` selects (the next
        ``times`` of them; all, when None) with ``code`` inside a 200 answer; the request's
        other statements reach the table."""
        with self._lock:
            self._statement_plans.append(_StatementPlan(code, message, times, match))

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self._statement_plans.clear()

    def reset_counts(self) -> None:
        with self._lock:
            self.attempts.clear()
            self.injected.clear()

    def _answer(self, request: AWSPreparedRequest, event_name: str, **_: Any) -> AWSResponse | None:
        operation = event_name.removeprefix("before-send.")
        with self._lock:
            self.attempts[operation] += 1
            if operation == "dynamodb.BatchExecuteStatement":
                self.sent.append(list(body(request).get("Statements", [])))
                if self._statement_plans:
                    refused = self._refused_statements(request)
                    if refused is not None:
                        return refused
            for plan in self._plans.get(operation, []):
                if plan.remaining == 0 or (plan.match is not None and not plan.match(request)):
                    continue
                if plan.remaining is not None:
                    plan.remaining -= 1
                self.injected[operation] += 1
                if plan.deliver:
                    delivered = self._http.send(request)
                    self.delivered.append((operation, delivered.status_code, delivered.content))
                url = request.url
                request.url = _NOWHERE  # moto's stubber, called after us, must not apply it
                return plan.fault.response(url)
        return None

    def _refused_statements(self, request: AWSPreparedRequest) -> AWSResponse | None:
        """Send the statements no plan refuses, and answer as DynamoDB would: theirs, with an
        error in the place of each refused one (None: no statement refused)."""
        statements: list[dict[str, Any]] = body(request)["Statements"]
        refusals: dict[int, _StatementPlan] = {}
        for index, statement in enumerate(statements):
            for plan in self._statement_plans:
                if plan.remaining != 0 and plan.match(statement):
                    if plan.remaining is not None:
                        plan.remaining -= 1
                    refusals[index] = plan
                    self.statements[plan.code] += 1
                    break
        if not refusals:
            return None
        kept = [s for i, s in enumerate(statements) if i not in refusals]
        answers: list[dict[str, Any]] = []
        if kept:
            payload = json.dumps({**body(request), "Statements": kept}).encode()
            request.body = payload
            request.headers["Content-Length"] = str(len(payload))
            sent = self._http.send(request)
            answers = list(json.loads(sent.content)["Responses"])
        table = statements[0]["Statement"].split('"')[1]
        responses = []
        for index in range(len(statements)):
            plan = refusals.get(index)
            if plan is None:
                responses.append(answers.pop(0))
            else:
                error = {"Code": plan.code, "Message": plan.message}
                responses.append({"Error": error, "TableName": table})
        url = request.url
        request.url = _NOWHERE
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": _request_id()}
        answer = json.dumps({"Responses": responses}).encode()
        return Fault("200", 200, headers, answer).response(url)


def body(request: AWSPreparedRequest) -> dict[str, Any]:
    """The JSON body of a request (JSON protocols)."""
    raw = request.body
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode()
    if not isinstance(raw, str) or not raw:
        return {}
    parsed: dict[str, Any] = json.loads(raw)
    return parsed


def is_claim_statement(statement: dict[str, Any]) -> bool:
    """A PartiQL claim: the INSERT of a CLAIMED run."""
    return statement.get("Statement", "").startswith("INSERT") and {
        "S": "CLAIMED"
    } in statement.get("Parameters", [])


def claim_statement_of(job: str) -> StatementMatch:
    """The PartiQL claims of one job's firings (by the run's key: ``RUN#<job>``)."""

    def match(statement: dict[str, Any]) -> bool:
        parameters = statement.get("Parameters", [])
        return is_claim_statement(statement) and {"S": f"RUN#{job}"} in parameters

    return match


def is_claim(request: AWSPreparedRequest) -> bool:
    """A request that claims: a BatchExecuteStatement with a claim's INSERT, or the PutItem of a
    CLAIMED run (claims one by one)."""
    request_body = body(request)
    if any(is_claim_statement(s) for s in request_body.get("Statements", [])):
        return True
    return bool(request_body.get("Item", {}).get("status", {}).get("S") == "CLAIMED")
