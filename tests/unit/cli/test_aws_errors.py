"""What an AWS endpoint's unexpected answer looks like in the CLI (issue 25, item 14): one line
naming the operation, the status and what came back, with a hint, never an HTML page; and
``tick --execute`` against an emulator's endpoint writes as ``make run`` does, one request a
write, unless STATE_TABLE_BATCH_WRITES says otherwise."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.parsers import ResponseParserError
from botocore.stub import Stubber

from mini_scheduler.cli.context import RegionClients
from mini_scheduler.cli.main import main
from mini_scheduler.errors import NOT_AWS_HINT, describe_aws_error
from tests.unit.cli.conftest import Aws
from tests.unit.cli.test_operator import ENV, cli

PAGE = (
    "<!doctype html>\n<html><head><title>500 Internal Server Error</title></head>\n<body>"
    "<h1>Internal Server Error</h1><p>The server encountered an internal error.</p></body></html>\n"
)


def client_error(code: str, message: str, status: int, operation: str = "Query") -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (
            client_error("ThrottlingException", "Rate exceeded\n  (slow down)", 400),
            "ThrottlingException: Rate exceeded (slow down)",
        ),
        (
            client_error("500", PAGE, 500, "BatchExecuteStatement"),
            "HTTP 500 answer to BatchExecuteStatement with no AWS error code (an HTML page: 500 "
            f"Internal Server Error) - {NOT_AWS_HINT}",
        ),
        (
            client_error("", "", 502),
            f"HTTP 502 answer to Query with no AWS error code (an empty body) - {NOT_AWS_HINT}",
        ),
        (
            client_error("403", '{"error": "missing token"}', 403),
            "HTTP 403 answer to Query with no AWS error code (the body "
            f'\'{{"error": "missing token"}}\') - {NOT_AWS_HINT}',
        ),
        (
            ResponseParserError(
                "Unable to parse response (syntax error: line 1, column 0), invalid XML "
                f"received. Further retries may succeed:\n{PAGE.encode()!r}"
            ),
            "an answer with no AWS error code (an HTML page: 500 Internal Server Error) - "
            f"{NOT_AWS_HINT}",
        ),
        (client_error("404", "Not Found", 404, "HeadObject"), "404: Not Found"),  # no body
        (ValueError("a\nb"), "ValueError: a b"),
    ],
    ids=["aws-code", "html-500", "empty-502", "json-403", "unparsable", "head-404", "other"],
)
def test_describe_aws_error(exc: BaseException, said: str) -> None:
    assert describe_aws_error(exc) == said


def test_an_html_answer_of_the_store_is_one_readable_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dynamodb = boto3.session.Session().client(
        "dynamodb",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    stub = Stubber(dynamodb)
    stub.add_client_error("query", "500", PAGE, http_status_code=500)
    with stub:
        code = main(
            ["schedule", "list", "--table", "state", "--region", "us-east-1"],
            environ={},
            clients=lambda region: lambda service: dynamodb,
        )
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "<html" not in err and "<title" not in err, err
    assert err.startswith("mini-scheduler schedule: DynamoDB Query (")
    assert (
        "on table state failed - HTTP 500 answer to Query with no AWS error code (an HTML " in err
    )
    assert err.endswith(f"page: 500 Internal Server Error) - {NOT_AWS_HINT}\n")


class _Unreadable:
    """A CloudFormation client whose answer the SDK cannot parse (a web page in AWS's place)."""

    def describe_stacks(self, **_: Any) -> Any:
        raise ResponseParserError(
            "Unable to parse response (syntax error: line 1, column 0), invalid XML received. "
            f"Further retries may succeed:\n{PAGE.encode()!r}"
        )


def test_an_answer_the_sdk_cannot_parse_is_one_readable_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["jobs", "--stack", "mini-scheduler", "--region", "us-east-1"],
        environ={},
        clients=lambda region: lambda service: _Unreadable(),
    )
    assert code == 1
    assert capsys.readouterr().err == (
        "mini-scheduler jobs: an answer with no AWS error code (an HTML page: 500 Internal "
        f"Server Error) - {NOT_AWS_HINT}\n"
    )


def _dynamodb_calls(session: boto3.session.Session) -> list[str]:
    calls: list[str] = []
    session.events.register(
        "before-call.dynamodb", lambda model, **_: calls.append(str(model.name))
    )
    return calls


@pytest.mark.parametrize(
    ("batch_writes", "batched"), [(None, False), ("true", True)], ids=["default", "asked"]
)
def test_tick_execute_against_an_emulator_writes_as_make_run_does(
    capsys: pytest.CaptureFixture[str], aws: Aws, batch_writes: str | None, batched: bool
) -> None:
    session = boto3.session.Session()
    calls = _dynamodb_calls(session)
    environ = {key: value for key, value in ENV.items() if key != "STATE_TABLE_BATCH_WRITES"}
    environ["AWS_ENDPOINT_URL_DYNAMODB"] = "http://127.0.0.1:4566"  # moto answers all the same
    if batch_writes is not None:
        environ["STATE_TABLE_BATCH_WRITES"] = batch_writes
    run = cli(
        capsys,
        "tick",
        "--at",
        "2026-11-30T14:00:00Z",
        "--execute",
        environ=environ,
        clients=RegionClients(session),
    )
    assert ("BatchExecuteStatement" in calls) is batched, calls
    if not batched:  # moto's PartiQL fails the batch (a moto server answers it with HTML)
        assert run.code == 0, run.err
        assert "PutItem" in calls, calls
