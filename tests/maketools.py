"""The tool virtualenvs the Makefile installs (.venv-sam, .venv-sec): installing them once for all
pytest workers, and running their commands."""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT


def install_once(target: str, installed: Callable[[], bool], what: str) -> None:
    """`make -s <target>` (a no-op once installed), one pytest worker at a time; skip the test
    when the tools cannot be installed (no package index reachable): ``what`` names them."""
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
        pytest.skip(
            f"{what} could not be installed (make {target}): "
            f"{(done.stderr or done.stdout).strip()[-600:]}"
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
