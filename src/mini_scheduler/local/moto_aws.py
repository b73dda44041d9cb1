"""AWS for ``make run``: moto, in this process. The environment that keeps every call in it (dummy
credentials, no profile, no endpoint), one call at a time through it, and what the local run
creates in it at start, in each of its regions: the state table, the samples' idempotency table,
a role, the sample functions (their code runs in this process:
:mod:`mini_scheduler.local.dispatch`), a state machine for every flow the cron file names, and
the stack whose outputs the CLI reads as it reads a deployed one's (:func:`stack`)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import threading
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mini_scheduler.jobs import CronFile
from mini_scheduler.local.dispatch import SAMPLE_PREFIX

if TYPE_CHECKING:
    from mini_scheduler.aws import Clients

log = logging.getLogger("mini_scheduler.local")

REGION: Final = "us-east-1"
ACCOUNT: Final = "123456789012"  # moto's default account
STATE_TABLE: Final = "mini-scheduler-local"
IDEMPOTENCY_TABLE: Final = "mini-scheduler-local-idempotency"
MOTO_CREDENTIAL: Final = "testing"
"""What the local run gives boto3 as its key, secret and token: moto takes any, and nothing
the local run calls reaches AWS (its endpoints are unset, its profile and config files are not
read)."""
ROLE_NAME: Final = "mini-scheduler-local"
STACK_NAME: Final = "mini-scheduler-local"
TICKER_FUNCTION: Final = "mini-scheduler-local-ticker"
"""The ticker's name in each region: an Invoke of it through the local endpoint reaches that
region's ticker (:mod:`mini_scheduler.local.endpoint`)."""
_PLACEHOLDER: Final = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def _samplecode() -> Path:
    """The repository's ``samplecode`` (an editable install), else ``./samplecode``."""
    here = Path(__file__).resolve().parents[3] / "samplecode"
    return here if here.is_dir() else Path.cwd() / "samplecode"


SAMPLECODE: Final = _samplecode()


def local_environment(region: str = REGION) -> dict[str, str | None]:
    """What the local run sets in its own environment (None: removed): dummy credentials and
    its home region, no profile or config file, and no endpoint that would send a call past
    moto."""
    changes: dict[str, str | None] = {
        "AWS_ACCESS_KEY_ID": MOTO_CREDENTIAL,
        "AWS_SECRET_ACCESS_KEY": MOTO_CREDENTIAL,
        "AWS_SESSION_TOKEN": MOTO_CREDENTIAL,
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_PROFILE": None,
        "AWS_DEFAULT_PROFILE": None,
        "AWS_ACCOUNT_ID": None,
        "AWS_LAMBDA_FUNCTION_NAME": None,
        "IDEMPOTENCY_TABLE": IDEMPOTENCY_TABLE,
        "POWERTOOLS_METRICS_NAMESPACE": "MiniSchedulerLocal",
    }
    for key in os.environ:
        if key.startswith("AWS_ENDPOINT_URL"):
            changes[key] = None
    return changes


@contextlib.contextmanager
def changed_environment(changes: Mapping[str, str | None]) -> Iterator[None]:
    """This process's environment with ``changes`` (None: removed), restored afterwards."""
    saved = {key: os.environ.get(key) for key in changes}
    try:
        for key, value in changes.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def serialised_moto() -> Iterator[None]:
    """One AWS call at a time through moto: its DynamoDB copies a table while a transaction
    runs, so a write from another thread in the meantime breaks it (the ticker dispatches on
    worker threads, and the handlers' completions arrive on others)."""
    from moto.core.models import botocore_stubber

    lock = threading.RLock()
    original = botocore_stubber.process_request

    def process_request(request: Any) -> Any:
        with lock:
            return original(request)

    setattr(botocore_stubber, "process_request", process_request)  # noqa: B010
    try:
        yield
    finally:
        vars(botocore_stubber).pop("process_request", None)


def deploy(clients: Clients, samplecode: Path, cron_file: CronFile) -> None:
    """The tables, the role, the sample functions and the flows ``cron_file`` names, in the
    clients' region."""
    from mini_scheduler.claims.dynamodb import create_state_table

    create_state_table(clients("dynamodb"), STATE_TABLE)
    _idempotency_table(clients)
    role = _role(clients)
    _functions(clients, role, samplecode)
    _state_machines(clients, role, cron_file, samplecode)


def stack(clients: Clients, outputs: Mapping[str, str]) -> None:
    """The stack ``mini-scheduler local`` stands for in the clients' region: its outputs are
    what ``--stack`` reads of a deployed one (the table, the ticker function, the parameter,
    the environment's names), and the ticker function exists, so an Invoke of it is
    answered (by this region's ticker, through the local endpoint)."""
    role = _role(clients)
    clients("lambda").create_function(
        FunctionName=TICKER_FUNCTION,
        Runtime="python3.13",
        Role=role,
        Handler="app.handler",
        Code={"ZipFile": _zip()},
    )
    template = {
        "Description": "mini-scheduler on this machine (mini-scheduler local): nothing in AWS",
        "Resources": {},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    clients("cloudformation").create_stack(StackName=STACK_NAME, TemplateBody=json.dumps(template))


def _role(clients: Clients) -> str:
    """The functions' role: IAM is global, so the first region creates it and the others find
    it."""
    iam = clients("iam")
    try:
        return str(iam.get_role(RoleName=ROLE_NAME)["Role"]["Arn"])
    except iam.exceptions.NoSuchEntityException:
        document = json.dumps({"Version": "2012-10-17"})
        return str(
            iam.create_role(RoleName=ROLE_NAME, AssumeRolePolicyDocument=document)["Role"]["Arn"]
        )


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


def _idempotency_table(clients: Clients) -> None:
    dynamodb = clients("dynamodb")
    dynamodb.create_table(
        TableName=IDEMPOTENCY_TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
    )


def _functions(clients: Clients, role: str, samplecode: Path) -> None:
    """The sample functions exist in moto too (a flow's Lambda task invokes them there,
    where they answer their input); their code runs in this process."""
    folder = samplecode / "functions"
    names = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    client = clients("lambda")
    for name in names:
        client.create_function(
            FunctionName=SAMPLE_PREFIX + name,
            Runtime="python3.13",
            Role=role,
            Handler="app.handler",
            Code={"ZipFile": _zip()},
        )


def _state_machines(clients: Clients, role: str, cron_file: CronFile, samplecode: Path) -> None:
    """Every flow the cron file names: a sample's definition (``samplecode/flows/<x>.asl
    .json`` for ``mini-scheduler-sample-<x>``), else one Pass state."""
    client = clients("stepfunctions")
    names = {
        job.target.name.rsplit(":stateMachine:", 1)[-1].split(":", 1)[0]
        for job in cron_file.jobs
        if job.target.kind == "flow"
    }
    for name in sorted(names):
        definition = _flow_definition(name, samplecode, clients.region)
        client.create_state_machine(name=name, definition=definition, roleArn=role)


def _flow_definition(name: str, samplecode: Path, region: str) -> str:
    path = samplecode / "flows" / f"{name.removeprefix(SAMPLE_PREFIX)}.asl.json"
    if name.startswith(SAMPLE_PREFIX) and path.is_file():
        worker = f"arn:aws:lambda:{region}:{ACCOUNT}:function:{SAMPLE_PREFIX}heartbeat"
        values = {
            "Partition": "aws",
            "Region": region,
            "AccountId": ACCOUNT,
            "WorkerFunctionArn": worker,
        }
        return _PLACEHOLDER.sub(lambda m: values.get(m[1], worker), path.read_text())
    log.info("Flow %s has no definition here: it runs one Pass state", name)
    return json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
