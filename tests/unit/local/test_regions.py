"""Two regions on a laptop: make run's regions, its banner and log, the file and the endpoint the
CLI's ``--local`` reaches it by, and a failover watched through the CLI from start to end."""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mini_scheduler.cli.main import main as cli_main
from mini_scheduler.clock import FixedClock
from mini_scheduler.local import main as local_run
from mini_scheduler.local import runfile
from mini_scheduler.local.dispatch import in_region
from mini_scheduler.local.endpoint import (
    LocalEndpoint,
    credential_scope,
    invoked_ticker,
    ticker_answer,
)
from mini_scheduler.local.options import MAX_REGIONS, add_options, as_argv, region_list
from mini_scheduler.local.scheduler import ENVIRONMENTS, LocalScheduler
from tests.conftest import ROOT

SAMPLE = ROOT / "samplecode" / "cron.yaml"
START = datetime(2026, 11, 30, 13, 59, tzinfo=UTC)
TWO = ["us-east-1", "us-west-2"]
SETTLE_SECONDS = 10.0  # how long the runs dispatched may take to end


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the machine has configured, these tests never reach AWS."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


# -- the options ---------------------------------------------------------------------------------


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_options(parser)
    return parser.parse_args(argv)


def test_regions_are_region_names_one_to_three_each_once() -> None:
    assert region_list("us-east-1, us-west-2") == TWO
    assert region_list("eu-west-1") == ["eu-west-1"]
    assert len(ENVIRONMENTS) == MAX_REGIONS  # one environment name for each region
    for text, says in [
        ("us-east-1,useast", "not an AWS region: 'useast'"),
        ("us-east-1,us-west-2,eu-west-1,eu-central-1", "name 1 to 3 regions"),
        (",", "name 1 to 3 regions"),
        ("us-east-1,us-west-2,us-east-1", "us-east-1 given twice"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(says)):
            region_list(text)


def test_regions_go_back_to_arguments() -> None:
    args = _parse(["--regions", "us-east-1,us-west-2", "--no-demo"])
    assert args.regions == TWO
    assert as_argv(args) == ["--regions", "us-east-1,us-west-2", "--no-demo"]
    assert _parse(as_argv(args)) == args
    assert "--regions" not in as_argv(_parse([]))


def test_a_bad_regions_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert local_run.main(["--regions", "us-east-1,us-east-1"]) == 2
    assert "us-east-1 given twice: name each region once" in capsys.readouterr().err
    assert cli_main(["local", "--regions", "mars-1"]) == 2
    assert "not an AWS region: 'mars-1'" in capsys.readouterr().err


# -- the banner and the log ----------------------------------------------------------------------


def _read(regions: list[str]) -> LocalScheduler:
    scheduler = LocalScheduler(SAMPLE, regions=regions, demo=True)
    scheduler.read_cron_file()
    return scheduler


def test_the_banner_of_two_regions_names_each_and_how_to_watch_a_failover() -> None:
    text = local_run.banner(_read(TWO), "http://127.0.0.1:8765/", "http://127.0.0.1:8766")
    lines = text.splitlines()
    program = re.escape(local_run._program())
    assert "(us-east-1, us-west-2)" in lines[2]
    assert lines[3].startswith("  state table  mini-scheduler-local in each region ")
    start = lines.index(
        "  regions      us-east-1 prod, active (SSM /mini-scheduler/active-environment unset: prod)"
    )
    assert lines[start + 1] == "               us-west-2 DR, standby"
    assert "a backfill of heartbeat in us-east-1, and every minute a firing to each" in text
    assert "  console      http://127.0.0.1:8765/ " in text
    watch = lines.index("  failover     watch the firings move, from another terminal:")
    assert lines[watch - 1].startswith("  endpoint     http://127.0.0.1:8766 ")
    commands = lines[watch + 1 : watch + 4]
    for line, command in zip(
        commands,
        ["status --local", "failover --local --to DR", "history --local heartbeat"],
        strict=True,
    ):
        assert re.fullmatch(rf" {{17}}{program} {command}", line), line
    assert lines[-1].startswith("Ticking every minute")


def test_the_banner_of_one_region_is_as_it_was_with_the_endpoint_added() -> None:
    lines = local_run.banner(_read(["us-east-1"]), None, "http://127.0.0.1:8766").splitlines()
    assert lines[2].endswith("nothing leaves this machine (us-east-1)")
    assert (
        lines[3] == "  state table  mini-scheduler-local (DynamoDB on moto; gone when this stops)"
    )
    assert lines[7] == (
        "  environment  prod, active (SSM /mini-scheduler/active-environment unset: prod)"
    )
    assert lines[6].startswith("  targets      sqs://mini-scheduler-sample-queue, ")
    assert lines[9].startswith("  endpoint     http://127.0.0.1:8766 (this moto over HTTP")
    assert not any("failover" in line or "regions  " in line for line in lines)


def _formatted(formatter: logging.Formatter, region: str | None) -> str:
    record = logging.LogRecord("mini_scheduler.ticker", logging.INFO, "", 0, "Tick", None, None)
    record.created = 0
    if region is None:
        return formatter.format(record)
    with in_region(region):
        return formatter.format(record)


def test_with_several_regions_a_log_line_says_its_region() -> None:
    several = local_run.ConsoleFormatter(region_width=9)
    assert _formatted(several, "us-west-2") == "00:00:00 INFO    us-west-2 ticker      Tick"
    assert _formatted(several, None) == "00:00:00 INFO              ticker      Tick"
    one = local_run.ConsoleFormatter()
    assert _formatted(one, "us-east-1") == "00:00:00 INFO    ticker      Tick"


# -- the file that names a running make run ------------------------------------------------------


def _run(endpoint: str = "http://127.0.0.1:8766", pid: int | None = None) -> runfile.LocalRun:
    return runfile.LocalRun(
        endpoint=endpoint,
        regions=tuple(TWO),
        stack="mini-scheduler-local",
        cron_file=str(SAMPLE),
        pid=os.getpid() if pid is None else pid,
        started="2026-11-30T13:59:00+00:00",
    )


def test_the_run_file_is_there_while_it_runs(tmp_path: Path) -> None:
    environ = {runfile.DIR_VARIABLE: str(tmp_path / "runs")}
    with runfile.announced(_run(), tmp_path / "runs") as path:
        assert path.stat().st_mode & 0o777 == 0o600
        assert runfile.find(environ) == _run()
    assert not path.exists()
    with pytest.raises(runfile.NoLocalRun, match="no make run is running on this machine: start"):
        runfile.find(environ)


def test_a_run_file_of_a_gone_process_or_naming_another_host_is_ignored(tmp_path: Path) -> None:
    gone = 2**22 + 1  # above Linux's largest process id
    (tmp_path / f"local-{gone}.json").write_text(_run(pid=gone).to_json())
    elsewhere = _run("https://lambda.us-east-1.amazonaws.com")
    (tmp_path / f"local-{os.getpid()}.json").write_text(elsewhere.to_json())
    assert runfile.running({runfile.DIR_VARIABLE: str(tmp_path)}) == []


def test_the_run_dir(tmp_path: Path) -> None:
    assert runfile.run_dir({runfile.DIR_VARIABLE: "/x"}) == Path("/x")
    assert runfile.run_dir({"XDG_RUNTIME_DIR": "/run/user/7"}) == Path("/run/user/7/mini-scheduler")
    assert runfile.run_dir({}) == Path.home() / ".cache" / "mini-scheduler"


def test_local_without_a_running_make_run_says_to_start_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    environ = {runfile.DIR_VARIABLE: str(tmp_path)}
    assert cli_main(["status", "--local"], environ=environ) == 2
    assert capsys.readouterr().err == (
        "mini-scheduler status: no make run is running on this machine: start it (make run, "
        "or make run REGIONS=us-east-1,us-west-2) and run this again in another terminal\n"
    )


# -- the endpoint --------------------------------------------------------------------------------

AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=testing/20261130/us-west-2/lambda/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=0"
)


def test_a_request_s_region_and_service_are_its_credential_scope_s() -> None:
    assert credential_scope(AUTHORIZATION) == ("us-west-2", "lambda")
    assert credential_scope("Basic dXNlcjpwYXNz") is None


@pytest.mark.parametrize(
    ("method", "path", "ticker"),
    [
        ("POST", "/2015-03-31/functions/mini-scheduler-local-ticker/invocations", True),
        (
            "POST",
            "/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-west-2%3A123456789012%3Afunction%3A"
            "mini-scheduler-local-ticker/invocations",
            True,
        ),
        ("POST", "/2015-03-31/functions/mini-scheduler-sample-heartbeat/invocations", False),
        ("GET", "/2015-03-31/functions/mini-scheduler-local-ticker", False),
    ],
)
def test_only_an_invoke_of_the_ticker_is_the_ticker_s(method: str, path: str, ticker: bool) -> None:
    assert invoked_ticker(method, path) is ticker


def test_the_ticker_answers_as_its_handler_does() -> None:
    from mini_scheduler.errors import EventError

    def refuse(event: Any) -> Any:
        raise EventError("unknown job nope")

    def fail(event: Any) -> Any:
        raise RuntimeError("boom")

    status, headers, body = ticker_answer(lambda event: {"got": event}, b'{"job": "x"}')
    assert (status, json.loads(body)) == (200, {"got": {"job": "x"}})
    assert "X-Amz-Function-Error" not in headers
    _, _, refused = ticker_answer(refuse, b"{}")
    assert json.loads(refused) == {"status": "rejected", "error": "unknown job nope"}
    _, headers, failed = ticker_answer(fail, b"{}")
    assert headers["X-Amz-Function-Error"] == "Unhandled"
    assert json.loads(failed) == {"errorType": "RuntimeError", "errorMessage": "boom"}


def test_the_endpoint_serves_loopback_names_only() -> None:
    endpoint = LocalEndpoint({}, 0)
    endpoint.start()
    try:
        request = urllib.request.Request(
            endpoint.url + "/", headers={"Host": "attacker.example:80"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)  # nosec B310 # loopback only
        assert refused.value.code == 403
        with pytest.raises(urllib.error.HTTPError) as unsigned:
            urllib.request.urlopen(endpoint.url + "/", timeout=10)  # nosec B310
        assert unsigned.value.code == 400
    finally:
        endpoint.stop()


# -- a failover watched through the CLI ----------------------------------------------------------

FAILOVER_CRON = """
jobs:
  - name: "heartbeat"
    cron: "0/15 * * * * ?"
    service: "mini-scheduler-sample-heartbeat"
  - name: "cleanup"
    cron: "0 * * * * ?"
    service: "flow://mini-scheduler-sample-cleanup"
    parameters: {olderThanDays: 30}
"""


class HookedClock(FixedClock):
    """A fixed clock that, once a sleep reaches one of ``hooks``' instants, calls its hook
    (between two minutes' ticks: on the loop's thread, nothing else ticks meanwhile), and asks
    the loop to stop at ``until``."""

    def __init__(
        self,
        start: datetime,
        until: datetime,
        stop: threading.Event,
        hooks: dict[datetime, Callable[[], None]],
    ) -> None:
        super().__init__(start)
        self.until, self.stop, self.hooks = until, stop, dict(hooks)
        self.failed: list[BaseException] = []

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        for at in sorted(self.hooks):
            if self.now() >= at:
                hook = self.hooks.pop(at)
                try:
                    hook()
                except BaseException as exc:  # handed to the test after the run
                    self.failed.append(exc)
                    self.stop.set()
        if self.now() >= self.until:
            self.stop.set()


class Cli:
    """The CLI in this process, on the run's clock, reaching the run by its file."""

    def __init__(self, clock: FixedClock, run_dir: Path, capsys: pytest.CaptureFixture[str]):
        self.clock, self.environ, self.capsys = clock, {runfile.DIR_VARIABLE: str(run_dir)}, capsys

    def __call__(self, *argv: str) -> Any:
        self.capsys.readouterr()
        code = cli_main([*argv, "--local", "--json"], clock=self.clock, environ=self.environ)
        out, err = self.capsys.readouterr()
        assert code == 0, (argv, out, err)
        return json.loads(out)


def _by_region(history: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for run in history["runs"]:
        found.setdefault(run["region"], []).append(run["firingId"][-9:-1])
    return {region: sorted(times) for region, times in found.items()}


def _settled(cli: Cli, job: str, runs: int) -> dict[str, Any]:
    """``job``'s history once its ``runs`` runs have ended (its handlers run on workers):
    polled for at most :data:`SETTLE_SECONDS`."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        history: dict[str, Any] = cli("history", job, "--limit", "50")
        ended = [run for run in history["runs"] if run["status"] != "DISPATCHED"]
        if len(ended) >= runs:
            return history
        if time.monotonic() > deadline:
            raise AssertionError(f"{job}'s runs did not end: {history}")
        threading.Event().wait(0.05)


def test_two_regions_fail_over_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two minutes in us-east-1 (prod, active), then a failover to DR through the CLI, and two
    minutes in us-west-2: every firing runs in the active region only."""
    cron = tmp_path / "cron.yaml"
    cron.write_text(FAILOVER_CRON)
    stop = threading.Event()
    seen: dict[str, Any] = {}
    cli: Cli
    out = io.StringIO()

    def fail_over() -> None:
        seen["before"] = cli("status")
        seen["failover"] = cli("failover", "--to", "DR", "--operator", "tester")
        seen["after"] = cli("status")
        (url,) = (line.split()[1] for line in out.getvalue().splitlines() if "  console  " in line)
        with urllib.request.urlopen(url + "api/scheduler/environment", timeout=10) as answer:
            seen["console"] = json.load(answer)  # nosec B310 # loopback only
        seen["created"] = cli(
            "schedule",
            "create",
            "once-west",
            "--at",
            "2026-11-30T14:01:20Z",
            "--service",
            "mini-scheduler-sample-heartbeat",
            "--region",
            "us-west-2",
            "--operator",
            "tester",
        )

    def before() -> None:  # a one-time schedule made in us-east-1, due after the failover
        seen["made-east"] = cli(
            "schedule",
            "create",
            "once-east",
            "--at",
            "2026-11-30T14:02:20Z",
            "--service",
            "mini-scheduler-sample-heartbeat",
            "--operator",
            "tester",
        )

    def look() -> None:
        changed = tmp_path / "changed.yaml"  # the run's file with heartbeat's statement changed
        changed.write_text(FAILOVER_CRON.replace("0/15 * * * * ?", "0/20 * * * * ?"))
        capsys.readouterr()
        argv = ["plan", str(changed), "--local", "--json"]
        seen["plan"] = cli_main(argv, clock=clock, environ=cli.environ)
        seen["planned"] = json.loads(capsys.readouterr().out)
        seen["carried"] = _settled(cli, "once-east", 2)  # taken over in us-east-1, run in west
        seen["heartbeat"] = _settled(cli, "heartbeat", 16)
        seen["cleanup"] = _settled(cli, "cleanup", 4)
        seen["once"] = _settled(cli, "once-west", 1)

    clock = HookedClock(
        START,
        START + timedelta(minutes=4),
        stop,
        {
            START + timedelta(minutes=1): before,
            START + timedelta(minutes=2): fail_over,
            START + timedelta(minutes=4): look,
        },
    )
    cli = Cli(clock, tmp_path / "runs", capsys)
    argv = ["--cron-file", str(cron), "--regions", "us-east-1,us-west-2", "--console-port", "0"]
    code = local_run.main(argv, clock=clock, stop=stop, out=out, run_dir=tmp_path / "runs")
    assert not clock.failed, clock.failed
    assert code == 0, out.getvalue()
    assert not list((tmp_path / "runs").iterdir())  # the run file is gone with the run

    assert seen["before"]["activeRegions"] == ["us-east-1"]
    assert [r["region"] for r in seen["failover"]["regions"]] == TWO
    assert seen["failover"]["active"] == "DR"
    assert seen["after"]["activeRegions"] == ["us-west-2"]
    assert [r["active"] for r in seen["after"]["regions"]] == ["DR", "DR"]
    assert seen["created"]["created"][0]["name"] == "once-west"
    console = seen["console"]
    assert [r["region"] for r in console["regions"]] == TWO
    assert console["activeRegions"] == ["us-west-2"]

    # plan, against what each region's ticker reads now: the one change, in both regions
    assert seen["plan"] == 2  # changes (terraform's -detailed-exitcode)
    planned = seen["planned"]["regions"]
    assert [(r["region"], r["ok"], r["changes"]) for r in planned] == [(r, True, True) for r in TWO]
    for region in planned:
        (job,) = region["jobs"]
        assert (job["job"], job["action"]) == ("heartbeat", "change")
        assert job["fields"] == [
            {"field": "cron", "before": "0/15 * * * * ?", "after": "0/20 * * * * ?"}
        ]
        assert job["firings24h"] == {"appear": 2880, "disappear": 4320}

    seconds = [f"{m}:{s:02d}" for m in ("14:01", "14:02") for s in (0, 15, 30, 45)]
    assert _by_region(seen["heartbeat"]) == {
        "us-east-1": [f"{m}:{s:02d}" for m in ("13:59", "14:00") for s in (0, 15, 30, 45)],
        "us-west-2": seconds,
    }
    assert _by_region(seen["cleanup"]) == {
        "us-east-1": ["13:59:00", "14:00:00"],
        "us-west-2": ["14:01:00", "14:02:00"],
    }
    assert _by_region(seen["once"]) == {"us-west-2": ["14:01:20"]}
    # The schedule made in us-east-1 followed the failover: in step after the answer, taken
    # over in us-east-1's store at its firing, and run in us-west-2 only.
    assert seen["made-east"]["regions"] == {"inStep": ["us-west-2"]}
    carried = {run["region"]: run for run in seen["carried"]["runs"]}
    assert carried["us-west-2"]["status"] == "SUCCEEDED"
    assert carried["us-east-1"]["status"] == "SKIPPED"
    assert carried["us-east-1"]["reason"] == "taken over by us-west-2: it runs there"
    runs = [*seen["heartbeat"]["runs"], *seen["cleanup"]["runs"], *seen["once"]["runs"]]
    assert {run["status"] for run in runs} == {"SUCCEEDED"}
    lines = out.getvalue().splitlines()
    assert any(
        line.endswith(
            "us-west-2 ticker      Job heartbeat dispatched to "
            "mini-scheduler-sample-heartbeat - firing heartbeat@2026-11-30T14:01:15Z"
        )
        for line in lines
    ), lines
