"""``mini-scheduler console`` over two regions' stacks on moto: the regions resolved as every
command resolves them, reads from their stores, a run now sent to the ticker function, a pause
and a failover written in both, and nothing of the caller's credentials on the page."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from mini_scheduler.console.app import CSRF_HEADER
from mini_scheduler.console.server import ConsoleServer
from tests.unit.cli.conftest import PARAMETER, STACK, TICKER, Aws
from tests.unit.cli.test_operator import BOTH, FakeInvoker, cli

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


def serve_with(checks: Any) -> Any:
    """A ConsoleServer.serve that runs ``checks(client, app)`` instead of serving."""

    def serve(self: ConsoleServer, app: Any) -> None:
        with TestClient(app, base_url=self.url.rstrip("/")) as client:
            checks(client, app)

    return serve


def test_the_console_reads_and_acts_on_both_regions_stacks(
    capsys: pytest.CaptureFixture[str], aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    invoker = FakeInvoker(answer={"job": "heartbeat", "status": "DISPATCHED", "firingId": "x"})
    seen: dict[str, Any] = {}

    def checks(client: TestClient, app: Any) -> None:
        token = {CSRF_HEADER: app.state.csrf}
        jobs = client.get("/api/schedule").json()["jobs"]
        seen["jobs"] = [job["name"] for job in jobs]
        env = client.get("/api/scheduler/environment").json()
        seen["modes"] = [(r["region"], r["environment"], r["mode"]) for r in env["regions"]]
        seen["where"] = env["regions"][0]["where"]
        seen["run"] = client.post(
            "/api/schedule/heartbeat", json={"operator": "jane"}, headers=token
        ).json()
        seen["pause"] = client.post(
            "/api/schedule/heartbeat/pause", json={"operator": "jane"}, headers=token
        ).json()
        seen["failover"] = client.post(
            "/api/scheduler/environment", json={"active": "DR", "operator": "jane"}, headers=token
        ).json()
        seen["texts"] = [
            client.get(path).text
            for path in ("/", "/api/schedule", "/api/scheduler/environment", "/api/schedules")
        ]

    monkeypatch.setattr(ConsoleServer, "serve", serve_with(checks))
    run = cli(capsys, "console", "--stack", STACK, "--regions", BOTH, "--port", "0", invoke=invoker)
    assert run.code == 0, run.err
    assert run.lines[0].startswith(f"mini-scheduler console for {STACK} (us-east-1, us-west-2): ")
    assert "http://127.0.0.1:" in run.lines[0]
    assert seen["jobs"] == ["morning-report", "hourly-cleanup", "heartbeat"]
    assert seen["modes"] == [("us-east-1", "prod", "active"), ("us-west-2", "DR", "standby")]
    assert seen["where"] == f"table mini-scheduler-state, ssm:{PARAMETER}"
    assert seen["run"]["region"] == "us-east-1" and seen["run"]["status"] == "DISPATCHED"
    assert invoker.calls == [
        (
            "us-east-1",
            TICKER,
            {
                "job": "heartbeat",
                "operator": "jane",
                "parameters": {},
                "identity": "arn:aws:sts::123456789012:user/moto",  # the console's credentials
            },
        )
    ]
    assert seen["pause"]["failedRegions"] == []
    for region in ("us-east-1", "us-west-2"):
        assert "heartbeat" in aws.store(region).control("x").paused
        assert aws.active(region) == "DR"
    assert seen["failover"]["activeRegions"] == ["us-west-2"]
    assert not any(SECRET in text for text in seen["texts"])


def test_a_refusal_by_the_ticker_is_a_400_with_its_reason(
    capsys: pytest.CaptureFixture[str], aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    invoker = FakeInvoker(answer={"status": "rejected", "error": "unknown job 'heartbeat'"})
    seen: dict[str, Any] = {}

    def checks(client: TestClient, app: Any) -> None:
        answer = client.post(
            "/api/schedule/heartbeat",
            json={"operator": "jane"},
            headers={CSRF_HEADER: app.state.csrf},
        )
        seen["answer"] = (answer.status_code, answer.json())

    monkeypatch.setattr(ConsoleServer, "serve", serve_with(checks))
    run = cli(capsys, "console", "--stack", STACK, "--regions", BOTH, "--port", "0", invoke=invoker)
    assert run.code == 0, run.err
    assert seen["answer"] == (400, {"error": "the ticker refused it: unknown job 'heartbeat'"})


def test_a_port_in_use_and_a_bad_port_are_usage_errors(
    capsys: pytest.CaptureFixture[str], aws: Aws
) -> None:
    taken = ConsoleServer(0)
    try:
        run = cli(capsys, "console", "--stack", STACK, "--port", str(taken.port))
    finally:
        taken.stop()
    assert run.code == 2
    assert run.err.startswith(f"mini-scheduler console: cannot serve on 127.0.0.1:{taken.port} (")
    assert "give another --port, or 0 for any free one" in run.err
    assert cli(capsys, "console", "--port", "70000").code == 2
