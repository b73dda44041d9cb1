"""The fuzz tests' rig: the integration tests' AWS (moto for SSM, Lambda, Step Functions and S3;
AWS's own DynamoDB Local for the state table), reused as is, and what a fuzzed call is judged by.

A handler call is judged by :class:`Judge`: it must come back within its bound (no hang), as an
answer (no exception escapes but the documented infrastructure errors, and none of those either
here, where the infrastructure is healthy); a rejected event's answer is
``{"status": "rejected", "error": "<text>"}`` and nothing was written for it: the state table
holds as many items as before, and SSM the same parameters with the same values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import load_event
from tests.system.integration.conftest import Aws
from tests.system.integration.conftest import aws as aws  # the fixture, re-exported
from tests.system.integration.conftest import invoke_recorder as invoke_recorder
from tests.system.integration.conftest import invoke_ticker as invoke_ticker

CALL_SECONDS = 30.0
"""The bound on one handler call. The ticker's Lambda timeout is 150 s and the recorder's 30 s;
on the emulators a call takes milliseconds (a tick that waits for its minute's firings waits on
the fixed clock, which advances instead of sleeping)."""


@dataclass(frozen=True)
class State:
    """What a rejected event must leave as it was."""

    items: int
    parameters: tuple[tuple[str, str], ...]


def state(aws: Aws) -> State:
    names: list[str] = []
    token: str | None = None
    while True:
        page = aws.ssm.describe_parameters(**({"NextToken": token} if token else {}))
        names += [p["Name"] for p in page["Parameters"]]
        token = page.get("NextToken")
        if not token:
            break
    values = tuple(sorted((n, aws.ssm.get_parameter(Name=n)["Parameter"]["Value"]) for n in names))
    return State(aws.item_count(), values)


class Hung(AssertionError):
    """A handler call that did not come back within its bound."""


def bounded(call: Callable[[], Any], seconds: float = CALL_SECONDS) -> Any:
    """``call()`` on a daemon thread: its answer, or its exception re-raised here; Hung when it
    has not returned within ``seconds`` (the thread is left behind: a hang fails the test)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["answer"] = call()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="fuzzed-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise Hung(f"the call did not return within {seconds:.0f} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["answer"]


class Judge:
    """Calls a handler and checks its answer against the rules above. It keeps the state it saw
    last: only an answer that is not a rejection may have changed it, so a run of rejections
    costs one read of the state per call."""

    def __init__(self, aws: Aws) -> None:
        self.aws = aws
        self._state: State | None = None

    def __call__(self, handler: Callable[[Any], dict[str, Any]], event: Any) -> dict[str, Any]:
        before = self._state if self._state is not None else state(self.aws)
        self._state = None
        answer = bounded(lambda: handler(event))
        assert isinstance(answer, dict), f"not an answer: {answer!r}"
        if answer.get("status") == "rejected":
            error = answer.get("error")
            assert isinstance(error, str) and error.strip(), (
                f"a rejection without an error: {answer}"
            )
            after = state(self.aws)
            assert after == before, f"a rejected event wrote something: {answer}"
            self._state = after
        return answer


@pytest.fixture
def ticked(aws: Aws, invoke_ticker: Callable[[Any], dict[str, Any]]) -> Aws:
    """A scheduler that has run: a watermark, and dispatched runs the recorder can close
    (morning-report and heartbeat at 14:00, hourly-cleanup at 14:15)."""
    invoke_ticker({"tick": "2026-11-30T13:59:00Z"})
    aws.clock.set(aws.clock.now().replace(hour=14, minute=0, second=0))
    invoke_ticker(load_event("tick.json"))
    aws.clock.set(aws.clock.now().replace(minute=15, second=0))
    invoke_ticker({"tick": "2026-11-30T14:15:00Z"})
    return aws


@pytest.fixture
def judge(ticked: Aws) -> Judge:
    return Judge(ticked)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Lone surrogates escaped in what a test printed (the handlers log fuzzed text): pytest-xdist
    cannot send a report that holds one from its worker."""
    report = yield
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8"))
        for title, text in report.sections
    ]
    return report
