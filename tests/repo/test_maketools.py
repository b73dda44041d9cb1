"""The tool venvs' installer: in `make test` a tool that cannot be installed fails its tests;
only an explicit SKIP_TOOL_TESTS=1 turns that into a skip."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests import maketools
from tests.maketools import OPT_OUT, install_once


def outcome(target: str, installed: Callable[[], bool], what: str) -> BaseException | None:
    """What install_once ended the test with (a failure or a skip), or None: it went on."""
    try:
        install_once(target, installed, what)
    except (pytest.fail.Exception, pytest.skip.Exception) as exc:
        return exc
    return None


def test_a_tool_that_cannot_be_installed_fails_its_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(OPT_OUT, raising=False)
    failed = outcome("no-such-target", lambda: False, "the no-such tools")
    assert isinstance(failed, pytest.fail.Exception), repr(failed)
    message = str(failed)
    assert message.startswith(
        "the no-such tools could not be installed (make no-such-target exited 2): "
    )
    assert "No rule to make target" in message
    assert message.endswith(
        "make test installs them first; to run the tests without them, set SKIP_TOOL_TESTS=1 "
        "(their tests are then skipped)"
    )


def test_a_target_that_installs_nothing_fails_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """`make help` exits 0, and the tools are still not there."""
    monkeypatch.delenv(OPT_OUT, raising=False)
    failed = outcome("help", lambda: False, "the no-such tools")
    assert isinstance(failed, pytest.fail.Exception), repr(failed)
    assert str(failed).startswith("the no-such tools could not be installed (make help exited 0)")


def test_opting_out_skips_what_is_not_installed_and_installs_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OPT_OUT, "1")
    made: list[Any] = []
    monkeypatch.setattr(maketools.subprocess, "run", lambda *a, **k: made.append(a))
    skipped = outcome("sam-tools", lambda: False, "the SAM CLI")
    assert isinstance(skipped, pytest.skip.Exception), repr(skipped)
    assert str(skipped) == (
        "the SAM CLI not installed and SKIP_TOOL_TESTS=1: make sam-tools installs them"
    )
    assert outcome("sam-tools", lambda: True, "the SAM CLI") is None  # installed: tests run
    assert made == []
