"""Reading template.yaml in the tests: its YAML (with CloudFormation's short tags), the SAM CLI's
virtual environment (.venv-sam, made by `make sam-tools`), and the template translated to plain
CloudFormation by aws-sam-translator there."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.maketools import install_once, run

TEMPLATE = ROOT / "template.yaml"
SAM_VENV = ROOT / ".venv-sam"
SAM = SAM_VENV / "bin" / "sam"
CFN_LINT = SAM_VENV / "bin" / "cfn-lint"
SAM_PYTHON = SAM_VENV / "bin" / "python"
TRANSLATE = Path(__file__).with_name("translate.py")

# The environment the SAM CLI runs in: no telemetry, and no Docker (a build that needed it fails).
SAM_ENV = {"SAM_CLI_TELEMETRY": "0", "DOCKER_HOST": "unix:///nonexistent/docker.sock"}


# -- template.yaml as data ------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags read as their long forms (!Ref x -> {"Ref": x})."""


def _intrinsic(loader: _Loader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_Loader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = yaml.load(handle, Loader=_Loader)  # a SafeLoader
    return loaded


def references(node: Any) -> Iterator[str]:
    """The logical ids and parameters ``node`` refers to (Ref, GetAtt, ${...} in Fn::Sub)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                yield value
            elif key == "Fn::GetAtt":
                yield value[0] if isinstance(value, list) else str(value).split(".")[0]
            elif key == "Fn::Sub":
                text, variables = (value, {}) if isinstance(value, str) else value
                for name in re.findall(r"\$\{([A-Za-z0-9:]+)", text):
                    if name not in variables:
                        yield name
                yield from references(variables)
            else:
                yield from references(value)
    elif isinstance(node, list):
        for item in node:
            yield from references(item)


def statements(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A policy document's statements, an ``Fn::If`` statement counted with both branches."""
    found: list[dict[str, Any]] = []
    raw = document.get("Statement", [])
    for item in raw if isinstance(raw, list) else [raw]:
        if isinstance(item, Mapping) and "Fn::If" in item:
            found.extend(
                dict(branch)
                for branch in item["Fn::If"][1:]
                if isinstance(branch, Mapping) and "Ref" not in branch
            )
        elif isinstance(item, Mapping):
            found.append(dict(item))
    return found


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# -- the SAM CLI ---------------------------------------------------------------------------------


def ensure_sam_tools() -> None:
    """`make sam-tools`, once for all pytest workers (a failure when it cannot: see maketools)."""
    install_once("sam-tools", SAM.exists, "the AWS SAM CLI and cfn-lint (into .venv-sam)")


def run_tool(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    return run(args, env={**SAM_ENV, **(env or {})}, timeout=timeout)


def shared(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """A folder made once per test run, whatever the number of pytest-xdist workers: the first
    worker to ask makes it (``make(folder)``), the others wait for it and reuse it."""
    base = factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (folder / ".done").exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                make(folder)
                (folder / ".done").touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder


def translate(output: Path, region: str = "us-east-1") -> dict[str, Any]:
    """template.yaml as CloudFormation, by aws-sam-translator in .venv-sam (see translate.py)."""
    done = run_tool([SAM_PYTHON, TRANSLATE, TEMPLATE, output, "--region", region], timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"the SAM translator refused template.yaml:\n{done.stderr}")
    translated: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
    return translated


def python_for_lambda() -> str:
    """An interpreter of the Lambda runtime's version (3.13) when this machine has one, so the
    packaged binary wheels load; otherwise this one (their pure-Python fallbacks load).
    COMPILE_PYTHON names one as it does for src/Makefile (where LAMBDA_PYTHON is a version)."""
    candidates = [os.environ.get("COMPILE_PYTHON", ""), "python3.13"]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.13*/bin/python3.13"))
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run(
                [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 13))"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == "True":
            return candidate
    return sys.executable
