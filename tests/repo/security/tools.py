"""The security tools' virtual environment (.venv-sec, made by `make security-tools`, a
prerequisite of `make test`): checkov and bandit, run offline, as `make security` runs them."""

from __future__ import annotations

import shlex
import subprocess

from tests import maketools
from tests.conftest import ROOT
from tests.maketools import install_once

SEC_VENV = ROOT / ".venv-sec"
PYTHON = SEC_VENV / "bin" / "python"
CHECKOV = SEC_VENV / "bin" / "checkov"
BANDIT = SEC_VENV / "bin" / "bandit"


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
    """`make security-tools`, once for all pytest workers (a failure when it cannot: see
    maketools)."""
    install_once(
        "security-tools",
        lambda: CHECKOV.exists() and BANDIT.exists(),
        "checkov and bandit (into .venv-sec)",
    )


run = maketools.run


def output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
