"""Secrets never reach the logs.

What is secret here: the values of a job's ``parameters`` (from cron.yaml, a manual run's
overrides, or a completion event's copy of the payload; a target's own error text is not one,
it is what the recorder is for), the AWS credentials, and the MongoDB URI's password
(tests/contract/claims/test_mongo_connection.py holds the Mongo helper to that; here, end to
end through the handler). Keys and names may be logged: job names, parameter keys (the
warning about a reserved ``_`` key names it), operators.

The rule is checked at DEBUG, not only at INFO: LogLevel is a template parameter an operator may
turn to DEBUG on a production stack. Every record of the scheduler's loggers (``mini_scheduler.*``
and Powertools' ``mini-scheduler``) is read, with its extra fields, and everything the process
wrote to its standard output and error. botocore's own DEBUG lines (request bodies) are not the
scheduler's: nothing in the functions turns them on, and Lambda's root logger stays at WARNING
(the template sets no ApplicationLogLevel).

The answer to the invoker of a manual run does echo the merged parameters: that is the caller's
own data, returned to an identity allowed to invoke the ticker, not a log.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from mini_scheduler.clock import FixedClock
from mini_scheduler.errors import CronFileError, SchedulerError
from mini_scheduler.handlers import ticker as ticker_handler
from mini_scheduler.jobs import Target, check_parameters_fit, load
from tests.conftest import load_event
from tests.contract.claims.conftest import closed_port
from tests.repo.template import cfn
from tests.system.integration.conftest import Aws

Invoke = Callable[[Any], dict[str, Any]]
SECRET = "s3cr3t-7f1d9c"
AWS_SECRET = "aws-s3cr3t-51ab7e"
PASSWORD = "m0ngo-s3cr3t-9d2"
CARD = "4111111111111111411111111111111111111111"
"""A parameter too long for a DynamoDB number (40 digits), holding a card number (16)."""
PAN = CARD[:16]
SCHEDULER_LOGGERS = ("mini_scheduler", "mini-scheduler")


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logs(capfd: pytest.CaptureFixture[str]) -> Iterator[Callable[[], str]]:
    """Everything the scheduler logs from now on, at DEBUG, as one text to search."""
    keep = _Keep()
    saved = []
    for name in SCHEDULER_LOGGERS:
        found = logging.getLogger(name)
        saved.append((found, found.level))
        found.setLevel(logging.DEBUG)
        found.addHandler(keep)
    logging.getLogger().addHandler(keep)

    def text() -> str:
        out, err = capfd.readouterr()
        records = [
            f"{r.name} {r.levelname} {r.getMessage()} {json.dumps(vars(r), default=str)}"
            for r in keep.records
        ]
        return "\n".join([*records, out, err])

    try:
        yield text
    finally:
        logging.getLogger().removeHandler(keep)
        for found, level in saved:
            found.removeHandler(keep)
            found.setLevel(level)


def _secret_parameters() -> dict[str, Any]:
    return {"token": SECRET, "nested": {"list": [SECRET, {"deep": SECRET}]}}


def test_the_template_never_asks_powertools_to_log_events() -> None:
    for name, resource in cfn.load_template()["Resources"].items():
        variables = resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
        for key in ("POWERTOOLS_LOGGER_LOG_EVENT", "POWERTOOLS_DEBUG"):
            assert key not in variables, f"{name} sets {key}: it would log whole events"
    globals_ = cfn.load_template().get("Globals", {}).get("Function", {})
    assert "POWERTOOLS_LOGGER_LOG_EVENT" not in json.dumps(globals_)


@pytest.mark.dynamodb_local
def test_no_parameter_value_nor_credential_is_logged_even_at_debug(
    aws: Aws,
    invoke_ticker: Invoke,
    invoke_recorder: Invoke,
    logs: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_SECRET)
    text = aws.cron_path.read_text(encoding="utf-8")
    aws.cron_path.write_text(
        text.replace('region: "east"', f'region: "east"\n      apiKey: "{SECRET}"').replace(
            "jobs:\n",
            f"jobs:\n  - {{name: card-job, cron: '0 0 9 * * ?', service: fn, "
            f"parameters: {{pan: {CARD}}}}}\n",
        ),
        encoding="utf-8",
    )
    assert SECRET in aws.cron_path.read_text(encoding="utf-8")

    invoke_ticker({"tick": "2026-11-30T13:59:00Z"})
    aws.clock.set(aws.clock.now().replace(hour=14, minute=0, second=0))
    tick = invoke_ticker(load_event("tick.json"))
    assert tick["counts"]["dispatched"] >= 5  # morning-report among them, with the secret
    manual = invoke_ticker(
        {"job": "morning-report", "operator": "jane.doe", "parameters": _secret_parameters()}
    )
    assert manual["status"] == "DISPATCHED" and manual["parameters"]["token"] == SECRET
    rejected = [
        {"job": "morning-report", "operator": "jane doe", "parameters": _secret_parameters()},
        {"job": "morning-report", "operator": "jane.doe", "parameters": {"x": SECRET * 40_000}},
        {"job": "morning-report", "operator": "jane.doe", "parameters": {"_x": SECRET}},
        {"job": "no-such-job", "operator": "jane.doe", "parameters": _secret_parameters()},
        {"job": "morning-report", "operator": "jane.doe", "parameters": [SECRET]},
        {"job": "morning-report", "operator": "jane.doe", "parameters": {"pan": int(CARD)}},
    ]
    answers = [invoke_ticker(event) for event in rejected]
    assert [a.get("status") for a in answers[:2]] == ["rejected", "rejected"]
    for name in ("lambda-destination-success.json", "lambda-destination-failure.json"):
        event = load_event(name)
        event["requestPayload"]["parameters"] = _secret_parameters()
        event["responsePayload"]["rows"] = SECRET
        invoke_recorder(event)
    completion = load_event("lambda-destination-success.json")
    completion["requestPayload"]["parameters"] = _secret_parameters()
    completion["requestPayload"]["firingId"] = manual["firingId"]
    assert invoke_recorder(completion)["recorded"] is True
    invoke_recorder({"requestContext": {"condition": "Maybe"}, "requestPayload": {"p": SECRET}})

    logged = logs()
    assert "dispatched to" in logged and "Operator jane.doe runs morning-report" in logged
    assert "Invalid job entry#1 (card-job) - " in logged
    assert answers[-1]["status"] == "rejected" and PAN not in json.dumps(answers[-1])
    assert SECRET not in logged, _around(logged, SECRET)
    assert AWS_SECRET not in logged, _around(logged, AWS_SECRET)
    assert PAN not in logged, _around(logged, PAN)


PARAMETER_VALUES_REFUSED = {
    "too-many-digits": f"{{pan: {CARD}}}",
    "nested": f"{{card: {{numbers: [1, -{CARD}]}}}}",
    "out-of-range": f"{{pan: {PAN}.0e+300}}",
    "not-a-mapping": f'"pan={PAN}"',
    "a-list": f"[{PAN}]",
}
WHOLE_FILE_REFUSED = ("!!int", "!!float", "!!bool", "!!timestamp")


def test_a_refused_parameter_is_named_by_its_key_never_its_value(
    logs: Callable[[], str],
) -> None:
    """Issue 11, item 11: `parameter card_pan is 4111...` reached the log. The load report (the
    ticker logs it as it is) and the refusal of a manual run (answered to the invoker and logged
    as `Event rejected: ...`) name the key and the rule; a value a YAML tag cannot read takes the
    whole file down naming the tag and the line."""
    entries = "".join(
        f"  - {{name: {name}, cron: '0 0 9 * * ?', service: fn, parameters: {value}}}\n"
        for name, value in PARAMETER_VALUES_REFUSED.items()
    )
    cron_file = load("jobs:\n" + entries, source="cron.yaml")
    assert cron_file.jobs == () and len(cron_file.problems) == len(PARAMETER_VALUES_REFUSED)
    cron_file.log(logging.getLogger("mini_scheduler.ticker"))
    for tag in WHOLE_FILE_REFUSED:
        with pytest.raises(CronFileError) as raised:
            load(
                f"jobs:\n  - {{name: a, cron: '0 0 9 * * ?', service: fn, parameters: "
                f"{{pin: {tag} {PAN}x}}}}\n"
            )
        logging.getLogger("mini_scheduler.ticker").error("%s", raised.value)
    for parameters in ({"pan": int(CARD)}, {"pan": [float(f"{PAN}e300")]}, f"pan={PAN}"):
        logging.getLogger("mini_scheduler.ticker").warning(
            "Event rejected: %s", check_parameters_fit(Target("lambda", "fn"), parameters)
        )
    logged = logs()
    assert "parameter pan is a number DynamoDB cannot store" in logged
    assert "parameter card.numbers[1] is a number DynamoDB cannot store" in logged
    assert "a value cannot be read as !!int (line 2" in logged
    assert PAN not in logged, _around(logged, PAN)


def _around(text: str, secret: str) -> str:
    at = text.find(secret)
    return f"logged: ...{text[max(0, at - 400) : at + 100]}..."


def test_a_mongodb_uri_password_shows_neither_in_the_error_nor_in_the_logs(
    logs: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ticker on a MongoDB claim store that cannot be reached: the tick fails with a
    StoreError (an infrastructure error: Lambda logs its traceback), which names the store and
    not the password, and neither do the logs."""
    uri = (
        f"mongodb://scheduler:{PASSWORD}@127.0.0.1:{closed_port()}/ops"
        "?serverSelectionTimeoutMS=300&connectTimeoutMS=300"
    )
    for key, value in {
        "STATE_TABLE": "unused",
        "CLAIM_STORE": "mongodb",
        "ACTIVE_ENVIRONMENT_STORE": "mongodb",
        "MONGODB_URI": uri,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    from mini_scheduler import mongo

    mongo.reset()
    ticker_handler.reset()
    monkeypatch.setattr(ticker_handler, "CLOCK", FixedClock(datetime(2026, 11, 30, 14, tzinfo=UTC)))
    try:
        with pytest.raises(SchedulerError) as raised:
            ticker_handler.handler({"tick": "2026-11-30T14:00:00Z"}, _Context())
    finally:
        ticker_handler.reset()
        mongo.reset()
    shown = "".join(traceback.format_exception(raised.value))
    assert "127.0.0.1" in shown or "MongoDB" in shown or "mongodb" in shown, shown
    assert PASSWORD not in shown, shown
    logged = logs()
    assert PASSWORD not in logged, _around(logged, PASSWORD)


class _Context:
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:mini-scheduler-ticker"
    function_name = "mini-scheduler-ticker"
    function_version = "$LATEST"
    memory_limit_in_mb = 256
    aws_request_id = "test-request"

    def get_remaining_time_in_millis(self) -> int:
        return 120_000
