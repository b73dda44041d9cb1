"""The command line: validate and next, their output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from mini_scheduler.cli.main import main
from mini_scheduler.clock import FixedClock
from tests.conftest import ROOT
from tests.unit.jobs.helpers import BASE, document

SAMPLE = ROOT / "samplecode" / "cron.yaml"
NOW = datetime(2026, 3, 7, 12, 0, 7, tzinfo=UTC)  # a Saturday; New York springs forward on the 8th
CLOCK = FixedClock(NOW)


def run(capsys: pytest.CaptureFixture[str], *argv: str, **env: str) -> tuple[int, str, str]:
    code = main(list(argv), clock=CLOCK, environ=env)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cron.yaml"
    path.write_text(text)
    return str(path)


# -- validate ---------------------------------------------------------------------------------


def test_validate_the_sample(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(SAMPLE))
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "INFO    Scheduled job: morning-report, service: mini-scheduler-sample-report, "
        "statement: 0 0 9 * * ?, time zone: America/New_York",
        "INFO    Scheduled job: hourly-cleanup, service: flow://mini-scheduler-sample-cleanup, "
        "statement: 0 15 * * * ?, time zone: UTC",
        "INFO    Scheduled job: heartbeat, service: mini-scheduler-sample-heartbeat, "
        "statement: 0/15 * * * * ?, time zone: UTC",
        f"{SAMPLE}: 3 jobs loaded, 0 entries skipped",
    ]


def test_validate_the_sample_as_make_run_and_the_template_use_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = run(capsys, "validate", "samplecode/cron.yaml")
    assert code == 0
    assert out.splitlines()[-1] == "samplecode/cron.yaml: 3 jobs loaded, 0 entries skipped"


def test_validate_reports_every_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(
        tmp_path,
        document(
            {**BASE, "timezone": "America/NewYork"},
            {**BASE, "name": "ok", "parameters": {"_x": 1}},
            {**BASE, "name": "flow", "service": "morning.report"},
        ),
    )
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    assert out.splitlines() == [
        "ERROR   Invalid job entry#1 (report) - check name, schedule and service: unknown time "
        "zone 'America/NewYork' - did you mean America/New_York?",
        "WARNING Job ok parameter _x ignored - a key that starts with '_' is reserved for the "
        "system",
        "INFO    Scheduled job: ok, service: report-fn, statement: 0 0 9 * * ?, time zone: UTC",
        "ERROR   Invalid job entry#3 (flow) - check name, schedule and service: service "
        "'morning.report' is a Mercury route name, not a Lambda function name (a dot is not "
        "allowed): name the Lambda function (or flow://state-machine) instead",
        f"{path}: 1 job loaded, 2 entries skipped (1 warning)",
    ]


def test_validate_quiet_prints_problems_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, document(BASE, {**BASE, "name": "b", "timezone": "EST"}))
    code, out, _ = run(capsys, "validate", "-q", path)
    assert code == 0
    assert out.splitlines() == [  # quiet: the problems only, no summary line
        "WARNING Job b time zone EST never follows daylight saving - name a region such as "
        "America/New_York",
    ]
    code, out, _ = run(capsys, "validate", "--quiet", str(SAMPLE))
    assert (code, out) == (0, "")  # nothing wrong: nothing printed
    code, out, _ = run(capsys, "validate", "--quiet", write(tmp_path, "jobs: [\n"))
    assert code == 1 and "is not valid YAML" in out


def test_validate_strict_makes_every_warning_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A typo that would silently mean the default fails under --strict, each one printed."""
    path = write(
        tmp_path,
        document({**BASE, "overlapp": "skip", "retry": {"retries": 2, "backof": 2}}),
    )
    code, out, _ = run(capsys, "validate", path)
    assert (
        code == 0
        and out.splitlines()[-1] == f"{path}: 1 job loaded, 0 entries skipped (2 warnings)"
    )
    code, out, _ = run(capsys, "validate", "--strict", path)
    assert code == 1
    assert out.splitlines() == [
        "ERROR   Job report key overlapp ignored - did you mean overlap? (a warning: --strict)",
        "ERROR   Job report key retry.backof ignored - did you mean retry.backoff? (a warning: "
        "--strict)",
        "INFO    Scheduled job: report, service: report-fn, statement: 0 0 9 * * ?, time zone: UTC",
        f"{path}: 1 job loaded, 0 entries skipped (2 warnings, errors under --strict)",
    ]
    code, out, _ = run(capsys, "validate", "--strict", "--json", path)
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["strict"] == {"warningsRefused": 2}
    assert {p["level"] for p in report["problems"]} == {"error"}
    code, out, _ = run(capsys, "validate", "--strict", str(SAMPLE))
    assert code == 0, out


def test_validate_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, document(BASE, {**BASE, "name": "x", "cron": "nope"}))
    code, out, _ = run(capsys, "validate", "--json", path)
    report = json.loads(out)
    assert code == 1
    assert report["ok"] is False and report["jobs"] == ["report"] and report["skipped"] == 1
    assert report["problems"] == [
        {
            "level": "error",
            "message": "Invalid job entry#2 (x) - check name, schedule and service: Bad second in "
            "'nope': illegal characters 'NOP'",
            "entry": 2,
        }
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "jobs: [",
            "is not valid YAML: while parsing a flow node: expected the node content, "
            "but found '<stream end>' (line 2, column 1)",
        ),
        ("", "is empty: it needs a jobs list"),
        ("- a", "must be a mapping with a jobs list, not a list"),
    ],
)
def test_validate_whole_file_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text + "\n" if text else "")
    code, out, err = run(capsys, "validate", path)
    assert code == 1 and err == ""
    assert out == f"ERROR   Cron file {path} {message}\n"
    assert "Traceback" not in out


def test_validate_whole_file_error_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, "jobs: 3\n")
    code, out, _ = run(capsys, "validate", "--json", path)
    assert code == 1
    assert json.loads(out) == {
        "source": path,
        "ok": False,
        "error": (f"Cron file {path}: jobs must be a list of job entries, not 3"),
    }


def test_validate_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "validate", str(tmp_path / "nope.yaml"))
    assert code == 1
    assert out == f"ERROR   Scheduler configuration not found in [{tmp_path / 'nope.yaml'}]\n"


def test_validate_uses_default_timezone(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(
        capsys, "validate", write(tmp_path, document(BASE)), DEFAULT_TIMEZONE="Europe/Paris"
    )
    assert code == 0 and "time zone: Europe/Paris" in out


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="cli-test-bucket")
        client.put_object(Bucket="cli-test-bucket", Key="cron.yaml", Body=SAMPLE.read_bytes())
        yield "cli-test-bucket"


def test_validate_s3(capsys: pytest.CaptureFixture[str], bucket: str) -> None:
    code, out, _ = run(capsys, "validate", f"s3://{bucket}/cron.yaml")
    assert code == 0
    assert out.splitlines()[-1] == f"s3://{bucket}/cron.yaml: 3 jobs loaded, 0 entries skipped"
    code, out, _ = run(capsys, "validate", f"s3://{bucket}/missing.yaml")
    assert code == 1
    assert out == f"ERROR   Scheduler configuration not found in [s3://{bucket}/missing.yaml]\n"


# -- next -------------------------------------------------------------------------------------


def test_next_statement_in_a_zone_across_dst(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "next", "--cron", "0 30 9 * * ?", "--zone", "America/New_York", "--count", "3"
    )
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "Next firings after 2026-03-07T12:00:07Z",
        "",
        "0 30 9 * * ? @America/New_York",
        "  Sat 2026-03-07 14:30:00 UTC   Sat 2026-03-07 09:30:00 EST (UTC-05:00)",
        "  Sun 2026-03-08 13:30:00 UTC   Sun 2026-03-08 09:30:00 EDT (UTC-04:00)",
        "  Mon 2026-03-09 13:30:00 UTC   Mon 2026-03-09 09:30:00 EDT (UTC-04:00)",
    ]


def test_next_statement_in_utc_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "next", "--cron", "0/20 * * * * ?", "-n", "2")
    assert code == 0
    assert out.splitlines()[2:] == [
        "0/20 * * * * ? @UTC",
        "  Sat 2026-03-07 12:00:20 UTC",
        "  Sat 2026-03-07 12:00:40 UTC",
    ]
    code, out, _ = run(
        capsys, "next", "--cron", "0 0 12 * * ?", "-n", "1", DEFAULT_TIMEZONE="Asia/Kolkata"
    )
    assert out.splitlines()[2:] == [
        "0 0 12 * * ? @Asia/Kolkata",
        "  Sun 2026-03-08 06:30:00 UTC   Sun 2026-03-08 12:00:00 IST (UTC+05:30)",
    ]


def test_next_after(capsys: pytest.CaptureFixture[str]) -> None:
    naive = run(capsys, "next", "--cron", "0 0 * * * ?", "-n", "1", "--after", "2026-01-01T10:30")
    aware = run(
        capsys, "next", "--cron", "0 0 * * * ?", "-n", "1", "--after", "2026-01-01T05:30:00-05:00"
    )
    zulu = run(
        capsys, "next", "--cron", "0 0 * * * ?", "-n", "1", "--after", "2026-01-01T10:30:00Z"
    )
    assert naive == aware == zulu
    assert naive[1].splitlines() == [
        "Next firings after 2026-01-01T10:30:00Z",
        "",
        "0 0 * * * ? @UTC",
        "  Thu 2026-01-01 11:00:00 UTC",
    ]


def test_next_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "next",
        "--cron",
        "0 30 1 * * ?",
        "--zone",
        "America/New_York",
        "--after",
        "2026-10-31T12:00:00Z",
        "--count",
        "2",
        "--json",
    )
    assert code == 0
    assert json.loads(out) == {
        "after": "2026-10-31T12:00:00Z",
        "schedules": [
            {
                "job": None,
                "statement": "0 30 1 * * ?",
                "zone": "America/New_York",
                "service": None,
                "enabled": True,
                "firings": [
                    {
                        "utc": "2026-11-01T05:30:00Z",
                        "local": "2026-11-01T01:30:00-04:00",
                        "abbreviation": "EDT",
                        "offset": "-04:00",
                    },
                    {
                        "utc": "2026-11-02T06:30:00Z",
                        "local": "2026-11-02T01:30:00-05:00",
                        "abbreviation": "EST",
                        "offset": "-05:00",
                    },
                ],
            }
        ],
    }


def test_next_of_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "next", str(SAMPLE), "--count", "2")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "Next firings after 2026-03-07T12:00:07Z",
        "",
        "morning-report  0 0 9 * * ? @America/New_York  -> mini-scheduler-sample-report",
        "  Sat 2026-03-07 14:00:00 UTC   Sat 2026-03-07 09:00:00 EST (UTC-05:00)",
        "  Sun 2026-03-08 13:00:00 UTC   Sun 2026-03-08 09:00:00 EDT (UTC-04:00)",
        "",
        "hourly-cleanup  0 15 * * * ? @UTC  -> flow://mini-scheduler-sample-cleanup",
        "  Sat 2026-03-07 12:15:00 UTC",
        "  Sat 2026-03-07 13:15:00 UTC",
        "",
        "heartbeat  0/15 * * * * ? @UTC  -> mini-scheduler-sample-heartbeat",
        "  Sat 2026-03-07 12:00:15 UTC",
        "  Sat 2026-03-07 12:00:30 UTC",
    ]


def test_next_of_a_file_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "next", str(SAMPLE), "--count", "1", "--json")
    schedules = json.loads(out)["schedules"]
    assert code == 0
    assert [(s["job"], s["service"], s["firings"][0]["utc"]) for s in schedules] == [
        ("morning-report", "mini-scheduler-sample-report", "2026-03-07T14:00:00Z"),
        ("hourly-cleanup", "flow://mini-scheduler-sample-cleanup", "2026-03-07T12:15:00Z"),
        ("heartbeat", "mini-scheduler-sample-heartbeat", "2026-03-07T12:00:15Z"),
    ]


def test_next_of_a_file_reports_skipped_entries_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        document({**BASE, "enabled": False}, {**BASE, "name": "bad", "timezone": "Nowhere"}),
    )
    code, out, err = run(capsys, "next", path, "-n", "1")
    assert code == 1  # as validate: an entry was skipped
    assert err == (
        "ERROR   Invalid job entry#2 (bad) - check name, schedule and service: unknown time "
        "zone 'Nowhere'\n"
    )
    assert "report  0 0 9 * * ? @UTC  -> report-fn  (disabled: the ticker skips it)" in out


def test_next_statement_that_never_fires_again(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "next", "--cron", "0 0 0 1 1 ? 2020")
    assert code == 0
    assert out.splitlines()[-1] == "  no firing after that"


def test_next_of_a_file_with_a_skipped_entry_prints_the_rest_and_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 11, item 12: `next FILE` exited 0 with entries skipped; it fails as validate does,
    after printing the firings of the jobs that loaded (text and JSON alike)."""
    path = write(tmp_path, document(BASE, {**BASE, "name": "bad-cron", "cron": "*/5 * * * *"}))
    skipped = (
        "ERROR   Invalid job entry#2 (bad-cron) - check name, schedule and service: Bad field "
        "count in '*/5 * * * *': 5 fields; a statement has 6 or 7 - written for Unix cron? In "
        "Quartz it is '0 */5 * * * ?'\n"
    )
    code, out, err = run(capsys, "next", path, "-n", "1")
    assert (code, err) == (1, skipped)
    assert out.splitlines()[2:] == [
        "report  0 0 9 * * ? @UTC  -> report-fn",
        "  Sun 2026-03-08 09:00:00 UTC",
    ]
    code, out, err = run(capsys, "next", path, "-n", "1", "--json")
    assert (code, err) == (1, skipped)
    assert [s["job"] for s in json.loads(out)["schedules"]] == ["report"]
    assert run(capsys, "validate", "-q", path)[0] == 1


def test_next_and_validate_show_a_job_that_never_fires(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, document({**BASE, "cron": "0 0 0 30 2 ?"}))
    warning = (
        "WARNING Job report never fires - 0 0 0 30 2 ? selects no time in UTC from 1970 to "
        "2999: check its day, month and year fields"
    )
    code, out, err = run(capsys, "next", path)
    assert (code, err) == (0, warning + "\n")
    assert out.splitlines()[-1] == "  no firing after that"
    code, out, _ = run(capsys, "validate", path)
    assert code == 0 and out.splitlines()[0] == warning
    assert out.splitlines()[-1] == f"{path}: 1 job loaded, 0 entries skipped (1 warning)"


def test_next_of_a_unix_statement_says_its_quartz_form(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "next", "--cron", "0 9 * * 1-5")
    assert (code, out) == (2, "")
    assert err == (
        "mini-scheduler next: Bad field count in '0 9 * * 1-5': 5 fields; a statement has 6 or "
        "7 - written for Unix cron? In Quartz it is '0 0 9 ? * MON-FRI'\n"
    )


def test_next_fixed_offset_zone_warns(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "next", "--cron", "0 0 9 * * ?", "--zone", "Etc/GMT+5", "-n", "1")
    assert code == 0
    assert err == (
        "WARNING time zone Etc/GMT+5 never follows daylight saving - name a region "
        "such as America/New_York\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--cron", "0 61 * * * ?"],
            "mini-scheduler next: Bad minute in '0 61 * * * ?': values are 0 to 59\n",
        ),
        (
            ["--cron", "0 0 9 * * ?", "--zone", "America/NewYork"],
            "mini-scheduler next: unknown time zone 'America/NewYork' - did you mean "
            "America/New_York?\n",
        ),
        ([], "mini-scheduler next: give a cron FILE, or --cron STATEMENT\n"),
        (
            ["cron.yaml", "--cron", "0 0 9 * * ?"],
            "mini-scheduler next: give FILE or --cron, not both\n",
        ),
        (
            ["cron.yaml", "--zone", "UTC"],
            "mini-scheduler next: --zone goes with --cron: a file's jobs name their zone\n",
        ),
    ],
)
def test_next_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, "next", *argv)
    assert (code, out, err) == (2, "", message)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--after", "yesterday"],
            "argument --after: not an ISO 8601 time: 'yesterday' (e.g. 2026-11-30T14:00:00Z)",
        ),
        (["--count", "0"], "argument --count/-n: give 1 to 1000, not 0"),
        (["--count", "many"], "argument --count/-n: not a whole number: 'many'"),
    ],
)
def test_next_bad_arguments(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, "next", "--cron", "0 0 9 * * ?", *argv)
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == f"mini-scheduler next: error: {message}"


def test_next_file_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "next", write(tmp_path, "jobs: ["))
    assert code == 1 and out == ""
    assert err.startswith(
        f"mini-scheduler next: Cron file {tmp_path / 'cron.yaml'} is not valid YAML"
    )
    assert len(err.splitlines()) == 1


def test_next_reads_the_clock_when_no_after_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["next", "--cron", "0 0 0 1 1 ?", "-n", "1"],
        clock=FixedClock(datetime(2030, 6, 1, tzinfo=UTC)),
        environ={},
    )
    assert code == 0
    assert "Wed 2031-01-01 00:00:00 UTC" in capsys.readouterr().out


# -- the program ------------------------------------------------------------------------------


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys)
    assert code == 2 and "the following arguments are required: COMMAND" in err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "validate" in out and "next" in out


def test_python_dash_m() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mini_scheduler", "validate", str(SAMPLE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"{SAMPLE}: 3 jobs loaded, 0 entries skipped"
