"""The security tools' virtual environment (.venv-sec, made by `make security-tools`, a
prerequisite of `make test`): checkov and bandit, run offline, as `make security` runs them."""

from __future__ import annotations

import fcntl
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.conftest import ROOT

SEC_VENV = ROOT / ".venv-sec"
PYTHON = SEC_VENV / "bin" / "python"
CHECKOV = SEC_VENV / "bin" / "checkov"
BANDIT = SEC_VENV / "bin" / "bandit"
_LOCK = Path(tempfile.gettempdir()) / "mini-scheduler-security-tools.lock"


def _make_variable(name: str) -> str:
    """A ``NAME := value`` of the Makefile (so the tests run the tools as make does)."""
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition(":=")
        if sep and key.strip() == name:
            return value.strip()
    raise AssertionError(f"the Makefile sets no {name}")


CHECKOV_ENV: dict[str, str] = dict(
    item.split("=", 1) for item in shlex.split(_make_variable("CHECKOV_ENV"))
)
"""What keeps checkov offline, as the Makefile has it: no download of policies or of the
platform's mapping, no look for a newer checkov on PyPI."""
CHECKOV_ARGS: list[str] = shlex.split(_make_variable("CHECKOV_ARGS"))


def ensure() -> None:
    """`make security-tools` (a no-op once installed), one pytest worker at a time; skip the
    test when the tools cannot be installed (no package index reachable)."""
    with _LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = subprocess.run(
                ["make", "-s", "security-tools"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if done.returncode != 0 or not (CHECKOV.exists() and BANDIT.exists()):
        pytest.skip(
            "checkov and bandit could not be installed into .venv-sec (make security-tools): "
            f"{(done.stderr or done.stdout).strip()[-600:]}"
        )


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **(env or {})},
    )


def output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
