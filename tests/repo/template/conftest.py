"""Fixtures for the template tests: template.yaml as data, and as translated by the SAM CLI's
own aws-sam-translator (in .venv-sam, installed by `make sam-tools`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.repo.template import cfn


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return cfn.load_template()


@pytest.fixture(scope="session")
def sam_tools() -> None:
    cfn.ensure_sam_tools()


@pytest.fixture(scope="session")
def translated(sam_tools: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = cfn.shared(
        tmp_path_factory, "translated", lambda folder: cfn.translate(folder / "template.json")
    )
    loaded: dict[str, Any] = json.loads((folder / "template.json").read_text(encoding="utf-8"))
    return loaded
