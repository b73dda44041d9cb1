"""One Lambda container in a fresh interpreter, for tests/system/integration/test_lambda_logs.py.

Run as ``python -m tests.system.integration.lambda_driver ticker|recorder``. It sets logging up as
the Python Lambda runtime does before it imports a function's module (one plain-text handler on the
root logger, which stays at WARNING, writing to the same stream as Powertools), imports that
function's handler module first, then sends it events from events/ (or built like them) against
moto. Nothing else configures logging: what the scheduler writes to stdout is what CloudWatch would
get. ``LOG_LEVEL`` comes from the caller's environment, as the template sets it.
"""

from __future__ import annotations

import logging
import sys

_root = logging.StreamHandler(sys.stdout)
_root.setFormatter(logging.Formatter("[%(levelname)s]\t%(asctime)s\t%(message)s"))
logging.getLogger().addHandler(_root)

# ruff: noqa: E402 # the runtime's logging comes first, then the function's module
import importlib
import io
import json
import os
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

FUNCTION = sys.argv[1] if len(sys.argv) > 1 else ""
if FUNCTION not in ("ticker", "recorder"):
    sys.exit("usage: python -m tests.system.integration.lambda_driver ticker|recorder")
importlib.import_module(f"mini_scheduler.handlers.{FUNCTION}")  # what Lambda imports first

import boto3
from moto import mock_aws

from mini_scheduler.claims.dynamodb import create_state_table
from mini_scheduler.clock import FixedClock
from mini_scheduler.handlers import recorder as recorder_handler
from mini_scheduler.handlers import ticker as ticker_handler

ROOT = Path(__file__).resolve().parents[3]
ACCOUNT = "123456789012"
TABLE = "mini-scheduler-logs"

TICKER_CRON = """
jobs:
  - name: "morning-report"
    cron: "0 0 9 * * ?"
    timezone: "America/New_York"
    service: "mini-scheduler-sample-report"
    overlap: "skip"
    parameters: {region: "east"}
  - name: "heartbeat"
    cron: "30 * * * * ?"
    service: "mini-scheduler-sample-heartbeat"
    misfire: "skip"
    timeout: 60
  - name: "every-minute"
    cron: "0 * * * * ?"
    service: "mini-scheduler-sample-report"
    overlap: "skip"
    parameters: {_origin: "reserved", size: 1}
  - name: "orphan"
    cron: "0 * * * * ?"
    service: "flow://mini-scheduler-no-such-flow"  # dispatch fails
  - name: "bad-cron"
    cron: "0 0 25 * * ?"
    service: "mini-scheduler-sample-report"
deferred.start: true
"""
RECORDER_CRON = """
jobs:
  - name: "morning-report"
    cron: "0 0 9 * * ?"
    timezone: "America/New_York"
    service: "mini-scheduler-sample-report"
    timeout: 3600  # its completion comes 15 minutes later, in time
  - name: "hourly-cleanup"
    cron: "0 15 * * * ?"
    service: "flow://mini-scheduler-sample-cleanup"
  - name: "heartbeat"
    cron: "0 * * * * ?"
    service: "mini-scheduler-sample-heartbeat"
    timeout: 3600
"""


class Context:
    """What the Lambda runtime passes a handler; ``millis`` is the invocation's time left."""

    function_version = "$LATEST"
    memory_limit_in_mb = 512
    aws_request_id = "driver-request"

    def __init__(self, function: str, millis: int = 120_000) -> None:
        self.function_name = f"mini-scheduler-{function}"
        self.invoked_function_arn = (
            f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{self.function_name}"
        )
        self.millis = millis

    def get_remaining_time_in_millis(self) -> int:
        return self.millis


def event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((ROOT / "events" / name).read_text(encoding="utf-8"))
    return loaded


CLOCK = FixedClock(datetime.fromisoformat("2026-11-30T13:59:00+00:00"))


def tick(minute: str, millis: int = 120_000) -> None:
    """The ticker's schedule at ``minute`` (HH:MM on the test's day), on time."""
    CLOCK.set(datetime.fromisoformat(f"2026-11-30T{minute}:00+00:00"))
    ticker_handler.handler({"tick": f"2026-11-30T{minute}:00Z"}, Context("ticker", millis))


def ticker_events() -> None:
    send = ticker_handler.handler
    context = Context("ticker")
    send({"environment": {"active": "prod", "operator": "jane.doe"}}, context)
    tick("13:59")  # the region's first tick: the cron file loads, the environment is read
    send(event("pause.json"), context)  # morning-report, due at 14:00
    CLOCK.set(datetime.fromisoformat("2026-11-30T14:00:00+00:00"))
    send(event("tick.json"), context)  # orphan's flow does not exist: its dispatch fails
    send(event("manual-run.json"), context)  # a manual run goes ahead while paused
    send({"job": "morning-report", "operator": "jane.doe", "parameters": {"_x": 1}}, context)
    tick("14:01")  # every-minute's 14:00 run has not ended: overlap
    tick("14:04")  # 14:02 and 14:03 missed; the heartbeats of 14:01 and before timed out
    tick("14:05", millis=25_000)  # its deadline is 14:05:05: the heartbeat of 14:05:30 waits
    send(event("environment-set.json"), context)  # DR is active: this region is on standby
    tick("14:06")
    send({"nonsense": True}, context)


def recorder_events() -> None:
    ticker_handler.handler(
        {"environment": {"active": "prod", "operator": "ops"}}, Context("ticker")
    )
    tick("13:59")
    tick("14:00")  # morning-report@2026-11-30T14:00:00Z
    tick("14:15")  # hourly-cleanup@2026-11-30T14:15:00Z
    context = Context("recorder")
    CLOCK.set(datetime.fromisoformat("2026-11-30T14:15:05+00:00"))
    recorder_handler.handler(event("lambda-destination-success.json"), context)
    recorder_handler.handler(event("sfn-status-failed.json"), context)
    recorder_handler.handler({"nonsense": True}, context)
    recorder_handler.handler(heartbeats_queued(), context)


def heartbeats_queued() -> dict[str, Any]:
    """A batch of the completion queue: the heartbeats of 14:00 and 14:15 succeeded."""
    batch = event("sqs-completions.json")
    records = [batch["Records"][0], dict(batch["Records"][0])]
    for record, minute in zip(records, ("00", "15"), strict=True):
        body = json.loads(record["body"])
        body["requestPayload"].update(
            job="heartbeat", firingId=f"heartbeat@2026-11-30T14:{minute}:00Z", parameters={}
        )
        body["timestamp"] = f"2026-11-30T14:{minute}:03.512Z"
        record.update(body=json.dumps(body), messageId=f"message-{minute}")
    return {"Records": records}


def create_targets() -> None:
    """The sample's functions and flow (tests.fakeaws has the same, but imports pytest)."""
    role = boto3.client("iam").create_role(RoleName="driver", AssumeRolePolicyDocument="{}")
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    for name in ("mini-scheduler-sample-report", "mini-scheduler-sample-heartbeat"):
        boto3.client("lambda").create_function(
            FunctionName=name,
            Runtime="python3.13",
            Role=role["Role"]["Arn"],
            Handler="app.handler",
            Code={"ZipFile": code.getvalue()},
        )
    flow = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    boto3.client("stepfunctions").create_state_machine(
        name="mini-scheduler-sample-cleanup",
        roleArn=role["Role"]["Arn"],
        definition=json.dumps(flow),
    )


def main() -> None:
    ticker_handler.CLOCK = CLOCK
    recorder_handler.CLOCK = CLOCK
    with (
        tempfile.TemporaryDirectory() as scratch,
        mock_aws(config={"lambda": {"use_docker": False}}),
    ):
        cron = Path(scratch) / "cron.yaml"
        cron.write_text(TICKER_CRON if FUNCTION == "ticker" else RECORDER_CRON, encoding="utf-8")
        os.environ.update(
            STATE_TABLE=TABLE,
            CRON_FILE=f"file:{cron}",
            ENVIRONMENT_NAME="prod",
            ACTIVE_ENVIRONMENT_STORE="dynamodb",  # moto's SSM takes a second to import
            DISPATCH_WORKERS="1",  # moto's DynamoDB is not thread-safe
            STATE_TABLE_BATCH_WRITES="false",  # moto's PartiQL ignores conditions
        )
        create_state_table(boto3.client("dynamodb"), TABLE)
        create_targets()
        if FUNCTION == "ticker":
            ticker_events()
        else:
            recorder_events()


if __name__ == "__main__":
    main()
