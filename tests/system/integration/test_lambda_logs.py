"""On Lambda, the log lines of docs/reference.md come out as Powertools JSON, at LOG_LEVEL.

pytest configures logging, so an in-process test cannot see what a Lambda container writes. Each
test here starts one function in a fresh interpreter (tests/system/integration/lambda_driver.py):
logging set up as the Lambda runtime does (a plain-text handler on the root logger, left at
WARNING), the function's handler module imported first, events from events/ (or built like them)
sent against moto. Its stdout is the function's log stream.

Every line of the "Log lines" table (docs/reference.md) that the events produce must be there,
matched by the table's own text, as JSON with ``level``, ``message``, the invocation's keys and the
keys the line carries (``extra``); and nothing may be written twice or as plain text. A line has a
``timestamp`` in Lambda's JSON log format (the recorder's), which reads it, and none in its text
format (the ticker's), where Lambda stamps each line. A firing's own line (its dispatch, a run's
end at INFO: one each for every firing) goes without the invocation's keys and the job and firing
its message names, and a run's end carries the recorder's counts as an embedded metric document
instead of a line of their own.
The rows no event produces here need a failing store or a dead ticker:
``Environment store ... unreadable`` (both), ``not claimed this tick - firing <id>: <error>`` and
``taken over``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess  # nosec B404 # the test starts its own driver, with a fixed command
import sys
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.docs import section

# (the table row's first words, the line's level, the keys it carries besides the message)
TICKER_LINES = [
    ("Scheduled job:", "INFO", {"cronFile", "entry"}),
    ("Invalid job entry#", "ERROR", {"cronFile", "entry"}),
    ("Job <job> parameter <key> ignored", "WARNING", {"cronFile", "entry"}),
    ("Scheduler instance", "INFO", set()),
    ("Scheduler environment", "INFO", set()),
    ("Defer execution", "INFO", {"job", "firingId"}),
    ("Standby:", "INFO", {"job"}),
    ("Job <job> dispatched to", "INFO", {"reference"}),  # a firing's line
    ("Job <job> ended", "WARNING", {"job", "firingId"}),  # TIMED_OUT by the sweep
    ("Job <job> skipped - its previous run", "INFO", {"job", "firingId"}),
    ("Job <job> missed", "WARNING", {"job"}),
    ("Job <job> skipped - paused", "INFO", {"job"}),
    ("Job <job> dispatch to", "ERROR", {"job", "firingId"}),
    (
        "Job <job> not claimed this tick - firing <id>: the tick is out of time",
        "WARNING",
        {"job", "firingId"},
    ),
    ("Operator <who> runs", "INFO", {"job"}),
    ("Active environment set to <name> by <who> -", "INFO", set()),
    ("Event rejected:", "WARNING", set()),
]
RECORDER_LINES = [
    ("Job <job> ended", "INFO", set()),  # SUCCEEDED: a firing's line
    (
        "Job <job> ended",
        "ERROR",
        {"job", "firingId", "error"},
    ),  # FAILED, from sfn-status-failed.json
    ("Event rejected:", "WARNING", set()),
]
EXPECTED = {"ticker": TICKER_LINES, "recorder": RECORDER_LINES}
INVOCATION_KEYS = {"function_request_id", "cold_start"}
FIRING_LINES = ["Job <job> dispatched to", "Job <job> ended"]  # at INFO
"""A firing's own lines (model.FIRING_LINE): the message names the job and the firing, and the
invocation's other lines (and Lambda's REPORT line) its request id and cold start."""
LEFT_OFF_FIRING_LINES = {"job", "firingId", "function_request_id", "cold_start"}
# handlers/_runtime.py: bytes on every line, and nothing they tell (the log group names the
# function; each message is found by its text; the functions are not traced)
UNLOGGED_KEYS = {
    "service",  # the same on every line of the function's own log group
    "function_arn",
    "function_memory_size",
    "function_name",
    "location",
    "xray_trace_id",
}
_AWS = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


def log_table() -> list[str]:
    """The first column of the log table in docs/reference.md: each line's text, ``<...>`` for a
    value."""
    table = section("docs/reference.md", "Log lines")
    return re.findall(r"^\| `([^`]+)` \|", table, flags=re.MULTILINE)


def row_pattern(first_words: str) -> re.Pattern[str]:
    """The one table row that starts with ``first_words``, as a pattern for a whole message."""
    rows = [row for row in log_table() if row.startswith(first_words)]
    assert len(rows) == 1, f"the log table has {len(rows)} rows starting {first_words!r}"
    parts = re.split(r"<[^>]+>|\.\.\.", rows[0])
    return re.compile(".+".join(re.escape(part) for part in parts), flags=re.DOTALL)


def run_function(
    function: str, log_level: str, lambda_log_level: str | None = None
) -> list[dict[str, Any]]:
    """What ``function`` writes to stdout in a fresh interpreter, each line parsed as JSON:
    a line that is not JSON (plain text from the runtime's root handler) fails the test.
    ``lambda_log_level`` is the ``AWS_LAMBDA_LOG_LEVEL`` Lambda sets for a function that logs in
    its JSON format (the recorder's ``ApplicationLogLevel`` in template.yaml)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    for key in ("POWERTOOLS_LOG_LEVEL", "POWERTOOLS_LOGGER_SAMPLE_RATE", "PYTEST_ADDOPTS"):
        env.pop(key, None)
    env.update(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",  # nosec B105 # moto's
        AWS_SESSION_TOKEN="testing",  # nosec B105 # moto's
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        POWERTOOLS_SERVICE_NAME="mini-scheduler",
        POWERTOOLS_METRICS_NAMESPACE="MiniScheduler",
        LOG_LEVEL=log_level,
        # the trace header Lambda gives every invocation, traced or not
        _X_AMZN_TRACE_ID="Root=1-6750a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=0",
    )
    if lambda_log_level:
        env["AWS_LAMBDA_LOG_FORMAT"] = "JSON"
        env["AWS_LAMBDA_LOG_LEVEL"] = lambda_log_level
    done = subprocess.run(  # nosec B603 # this interpreter, the repository's own driver
        [sys.executable, "-m", "tests.system.integration.lambda_driver", function],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    plain = [line for line in lines if not line.startswith("{")]
    assert plain == [], "lines not written as JSON (the root handler's, or twice):\n" + "\n".join(
        plain[:10]
    )
    return [json.loads(line) for line in lines]


def log_lines(written: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log lines (the rest are EMF metrics; a run's end may carry one too)."""
    return [line for line in written if "message" in line]


def metrics(written: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The EMF metric objects, alone or in a log line."""
    return [line for line in written if "_aws" in line]


def is_firing_line(line: dict[str, Any]) -> bool:
    return line["level"] == "INFO" and any(
        row_pattern(words).fullmatch(line["message"]) for words in FIRING_LINES
    )


def missing(lines: list[dict[str, Any]], expected: list[tuple[str, str, set[str]]]) -> list[str]:
    """The expected rows no line matches (text, level and keys)."""
    absent = []
    for first_words, level, keys in expected:
        pattern = row_pattern(first_words)
        if not any(
            line["level"] == level
            and pattern.fullmatch(line["message"])
            and keys <= set(line)
            and all(line[key] not in (None, "") for key in keys)
            for line in lines
        ):
            absent.append(f"{level} {first_words} ... with {sorted(keys)}")
    return absent


@pytest.mark.parametrize("function", ["ticker", "recorder"])
def test_each_documented_line_is_written_as_json_at_info(function: str) -> None:
    lines = log_lines(run_function(function, "INFO"))
    assert missing(lines, EXPECTED[function]) == []
    for line in lines:
        if is_firing_line(line):
            assert {"level", "message"} <= set(line), line
            assert not LEFT_OFF_FIRING_LINES & set(line), line
        else:
            assert {"level", "message", *INVOCATION_KEYS} <= set(line), line
        # service only as a dimension of the metrics a run's end carries
        assert not UNLOGGED_KEYS & set(line) - ({"service"} if "_aws" in line else set()), line
        assert "timestamp" not in line, line  # Lambda's text format stamps each line
    # once each: the core's line (once per container) and the Powertools logger's own
    once = ["Scheduler instance us-east-1/prod", "Event rejected:"]
    assert [sum(line["message"].startswith(text) for line in lines) for text in once] == [1, 1]


@pytest.mark.parametrize("function", ["ticker", "recorder"])
def test_log_level_warning_drops_the_info_lines(function: str) -> None:
    lines = log_lines(run_function(function, "WARNING"))
    assert [line["message"] for line in lines if line["level"] in ("DEBUG", "INFO")] == []
    louder = [row for row in EXPECTED[function] if row[1] != "INFO"]
    assert missing(lines, louder) == []


@pytest.mark.parametrize("function", ["ticker", "recorder"])
def test_log_level_holds_under_lambdas_application_log_level(function: str) -> None:
    """In Lambda's JSON log format the template keeps ApplicationLogLevel at INFO whatever
    LogLevel says (an EMF line has no ``level``: Lambda files it under INFO); LOG_LEVEL still
    decides what the handlers write, and the metrics still come out."""
    written = run_function(function, "WARNING", lambda_log_level="INFO")
    lines = log_lines(written)
    for line in lines:  # RFC 3339 in UTC, which Lambda's JSON log format reads as the line's time
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["timestamp"]), line
    assert [line["message"] for line in lines if line["level"] in ("DEBUG", "INFO")] == []
    assert missing(lines, [row for row in EXPECTED[function] if row[1] != "INFO"]) == []
    assert metrics(written) != []
    debug = log_lines(run_function(function, "INFO", lambda_log_level="DEBUG"))
    assert [line["message"] for line in debug if line["level"] == "DEBUG"] == []


def test_a_count_is_written_once_an_invocation() -> None:
    """A count is summed over the invocation (handlers/_runtime.py EmfMetrics): one value per
    metric object, whatever the firings."""
    for blob in metrics(run_function("ticker", "INFO")):
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                if metric["Unit"] == "Count":
                    value = blob[metric["Name"]]
                    assert not isinstance(value, list) or len(value) == 1, (metric, value)


def test_a_run_s_end_carries_the_recorder_s_counts() -> None:
    """EMF reads a metric document in any JSON log line: the recorder writes its counts in the
    invocation's last end line (a batch of the queue's: the batch's sum), not in a line of
    their own; counts no such line carried (a failure's) come out at the flush, as before."""
    written = run_function("recorder", "INFO")
    carried = [line for line in metrics(written) if "message" in line]
    assert [(line["message"].split(" - ")[0], line["RunsSucceeded"]) for line in carried] == [
        ("Job morning-report ended SUCCEEDED after 3512 ms", [1.0]),  # sent to it alone
        ("Job heartbeat ended SUCCEEDED after 3512 ms", [2.0]),  # the batch's last end
    ]
    for line in carried:
        (directive,) = line["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "MiniScheduler"
        assert directive["Dimensions"] == [["Environment", "Region", "service"]]
        assert (line["Environment"], line["Region"], line["service"]) == (
            "prod",
            "us-east-1",
            "mini-scheduler",
        )
    alone = [line for line in metrics(written) if "message" not in line]
    assert not any("RunsSucceeded" in line for line in alone)
    assert any("RunsFailed" in line for line in alone)  # sfn-status-failed.json's
