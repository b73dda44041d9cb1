"""What every command is given besides its arguments, and how it says it cannot go on.

A command is ``(args, context) -> exit code``. Exit codes: 0 done, 1 the thing checked is wrong
or an operation failed (an entry skipped, a file that cannot be read, an AWS call refused), 2 a
usage error (a bad argument, statement, zone, or missing configuration). The clock, the
environment variables, the AWS clients and the ticker's invoker are injected through
:class:`Context`, so tests are deterministic; the defaults here make no client before a command
needs one.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TextIO

from mini_scheduler.clock import Clock
from mini_scheduler.errors import SchedulerError

if TYPE_CHECKING:
    from mini_scheduler.aws import Clients

PROG: Final = "mini-scheduler"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
INVOKE_READ_TIMEOUT: Final = 300  # seconds a manual run may take to answer (the ticker's limit)
MAX_DOWNLOAD_BYTES: Final = 300 * 1024 * 1024  # a Lambda package: 250 MB unzipped at most
LOCAL_CREDENTIAL: Final = "testing"  # moto takes any key: make run's own
LOCAL_ENVIRONMENT: Final = {
    "CLAIM_STORE": "dynamodb",
    "STATE_TABLE_BATCH_WRITES": "false",  # make run's: moto's PartiQL ignores conditions
    "DEFAULT_TIMEZONE": "UTC",
}
"""The configuration a command with ``--local`` reads, as ``make run`` configures its tickers
(the rest comes from its stack's outputs)."""


@dataclass(frozen=True, slots=True)
class Invocation:
    """What a synchronous invoke of the ticker answered: its payload (parsed when it is JSON)
    and the function error, when the function raised instead of answering."""

    payload: Any
    function_error: str | None = None


Invoker = Callable[[str, str, Mapping[str, Any]], Invocation]
"""``(region, function, event) -> Invocation``: invoke the ticker function synchronously."""
ClientsFor = Callable[[str], "Clients"]
"""``region -> Clients``: the AWS clients of one region, each made on first use."""


class RegionClients:
    """The default :data:`ClientsFor`: one :class:`~mini_scheduler.aws.Clients` a region,
    all from one boto3 session (made on first use unless given)."""

    def __init__(self, session: Any = None) -> None:
        self._by_region: dict[str, Clients] = {}
        self._session: Any = session

    def __call__(self, region: str) -> Clients:
        import boto3

        from mini_scheduler.aws import Clients

        found = self._by_region.get(region)
        if found is None:
            if self._session is None:  # one session: its service models load once
                self._session = boto3.session.Session()
            found = self._by_region[region] = Clients(region, session=self._session, pool=16)
        return found


class LoopbackSession:
    """A boto3 session whose every client goes to ``endpoint`` (``make run``'s moto, on
    127.0.0.1) with moto's dummy credentials, whatever the environment and ``~/.aws``
    configure: no profile, no credentials file, no other endpoint is read."""

    def __init__(self, endpoint: str) -> None:
        import boto3
        import botocore.session

        # no profile: neither AWS_PROFILE nor a config file's is looked for
        core = botocore.session.Session(session_vars={"profile": (None, None, None, None)})
        core.set_config_variable("config_file", os.devnull)
        core.set_config_variable("credentials_file", os.devnull)
        self.endpoint = endpoint
        self._session = boto3.session.Session(
            aws_access_key_id=LOCAL_CREDENTIAL,
            aws_secret_access_key=LOCAL_CREDENTIAL,
            botocore_session=core,
        )

    def client(self, service: str, **options: Any) -> Any:
        return self._session.client(service, endpoint_url=self.endpoint, **options)  # type: ignore[call-overload]


def invoke_ticker(
    region: str, function: str, event: Mapping[str, Any], *, session: Any = None
) -> Invocation:
    """The default :data:`Invoker`: ``Invoke`` with ``RequestResponse``, never retried (a retry
    after a lost answer would run the job a second time). ``session``: the boto3 session to
    invoke from (a new one by default)."""
    import boto3
    from botocore.config import Config

    client = (session or boto3.session.Session()).client(
        "lambda",
        region_name=region,
        config=Config(
            connect_timeout=5,
            read_timeout=INVOKE_READ_TIMEOUT,
            retries={"total_max_attempts": 1, "mode": "standard"},
        ),
    )
    answer = client.invoke(
        FunctionName=function,
        InvocationType="RequestResponse",
        Payload=json.dumps(dict(event)).encode(),
    )
    raw = answer["Payload"].read().decode("utf-8", "replace")
    try:
        payload: Any = json.loads(raw) if raw else None
    except ValueError:
        payload = raw
    return Invocation(payload, answer.get("FunctionError"))


def download(url: str) -> bytes:
    """The default downloader: GET an ``https://`` URL (a Lambda package's presigned URL, from
    GetFunction), at most :data:`MAX_DOWNLOAD_BYTES`."""
    import urllib.request

    if not url.startswith("https://"):
        raise CommandError(f"will not download {url.split('?', 1)[0]}: not an https:// URL")
    with urllib.request.urlopen(url, timeout=60) as answer:  # nosec B310 # https only, above
        body: bytes = answer.read(MAX_DOWNLOAD_BYTES + 1)
    if len(body) > MAX_DOWNLOAD_BYTES:
        raise CommandError(f"{url.split('?', 1)[0]} is larger than {MAX_DOWNLOAD_BYTES} bytes")
    return body


@dataclass(frozen=True, slots=True)
class Context:
    """What a subcommand may use besides its arguments."""

    clock: Clock
    out: TextIO
    err: TextIO
    environ: Mapping[str, str]
    clients: ClientsFor = field(default_factory=RegionClients)
    invoke: Invoker = invoke_ticker
    sleep: Callable[[float], None] = time.sleep  # a command that polls waits on it
    download: Callable[[str], bytes] = download  # a deployed ticker's package (its cron file)
    # actions done whose audit record was not written (cli/audit.py): the command exits 1
    audit_failures: list[str] = field(default_factory=list)

    def print(self, text: str = "") -> None:
        print(text, file=self.out)

    def warn(self, text: str) -> None:
        print(text, file=self.err)

    def fail(self, command: str, message: str, code: int = EXIT_USAGE) -> int:
        """One line on stderr naming the command, and the exit code."""
        print(f"{PROG} {command}: {message}", file=self.err)
        return code


def on_local_run(context: Context, endpoint: str, region: str) -> Context:
    """``context`` for a command with ``--local``: every AWS call to ``endpoint`` with dummy
    credentials (:class:`LoopbackSession`), the ticker invoked there too, none of this shell's
    AWS or scheduler variables (only ``MINI_SCHEDULER_*`` ones are kept), and no ticker
    package downloaded (its presigned URL would name AWS)."""
    session = LoopbackSession(endpoint)
    environ = {k: v for k, v in context.environ.items() if k.startswith("MINI_SCHEDULER_")}
    environ |= LOCAL_ENVIRONMENT | {"AWS_REGION": region, "AWS_ENDPOINT_URL": endpoint}
    return dataclasses.replace(
        context,
        environ=environ,
        clients=RegionClients(session),
        invoke=functools.partial(invoke_ticker, session=session),
        download=_no_download,
    )


def _no_download(url: str) -> bytes:
    raise CommandError(
        "with --local nothing is downloaded: give --cron-file (make run's is read by default)"
    )


def ask_ticker(
    context: Context, command: str, region: str, function: str, event: Mapping[str, Any]
) -> Any:
    """Invoke the ticker with an operator's event and return its answer; CommandError when the
    invoke failed, the function failed, or the ticker refused the event (its reason)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from mini_scheduler.errors import describe_aws_error

    try:
        answer = context.invoke(region, function, event)
    except (BotoCoreError, ClientError) as exc:
        raise CommandError(
            f"Lambda Invoke {function} in {region} failed - {describe_aws_error(exc)}"
        ) from None
    payload = answer.payload
    if answer.function_error:
        detail = (
            payload
            if not isinstance(payload, Mapping)
            else f"{payload.get('errorType', 'Error')}: {payload.get('errorMessage', '')}"
        )
        raise CommandError(f"the ticker failed ({answer.function_error}): {detail}")
    if isinstance(payload, Mapping) and payload.get("status") == "rejected":
        raise TickerRefused(f"the ticker refused it: {payload.get('error')}")
    audit_said(context, command, payload)
    return payload


def audited_exit(code: int, context: Context) -> int:
    """A command's exit code: 1 instead of 0 when an action it did is not in the audit trail."""
    return EXIT_FAILED if code == EXIT_OK and context.audit_failures else code


def audit_said(context: Context, command: str, answer: Any) -> None:
    """When ``answer`` (an operator action's) says its audit record was not written: a
    warning on stderr, and the command will exit 1 though the action was done."""
    if isinstance(answer, Mapping) and answer.get("auditError"):
        error = str(answer["auditError"])
        context.audit_failures.append(error)
        context.warn(f"{PROG} {command}: warning: {error} (the action was done: do not repeat it)")


Handler = Callable[[argparse.Namespace, Context], int]


class CommandError(SchedulerError):
    """A command cannot go on: ``code`` is its exit code (2 usage, 1 an operation failed)."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


class TickerRefused(CommandError):
    """The ticker answered that it will not act on the event (its reason): nothing was done."""
