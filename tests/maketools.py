"""The tool virtualenvs the Makefile installs (.venv-sam, .venv-sec): installing them once for all
pytest workers, and running their commands.

`make test` installs them before pytest starts, so a tool that cannot be installed fails its
tests: a skip would let `make test` pass without running them. A developer without a package index
who runs pytest alone opts out with ``SKIP_TOOL_TESTS=1``: the tests of a tool that is not
installed are then skipped, and nothing is installed."""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT

OPT_OUT = "SKIP_TOOL_TESTS"


def install_once(target: str, installed: Callable[[], bool], what: str) -> None:
    """`make -s <target>` (a no-op once installed), one pytest worker at a time; the test fails
    when the tools cannot be installed (``what`` names them), or is skipped when they are not
    installed and ``SKIP_TOOL_TESTS=1`` is set."""
    if os.environ.get(OPT_OUT, "").strip() == "1":
        if not installed():
            pytest.skip(f"{what} not installed and {OPT_OUT}=1: make {target} installs them")
        return
    lock_path = Path(tempfile.gettempdir()) / f"mini-scheduler-{target}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = subprocess.run(
                ["make", "-s", target],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if done.returncode != 0 or not installed():
        pytest.fail(
            f"{what} could not be installed (make {target} exited {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-600:]}\n"
            f"make test installs them first; to run the tests without them, set {OPT_OUT}=1 "
            "(their tests are then skipped)",
            pytrace=False,
        )


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess[str]:
    """A command, its output captured, with this environment plus ``env``."""
    return subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )
