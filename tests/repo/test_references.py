"""What the repository says about itself holds: cited files exist, package data matches files,
and the Layout in docs/development.md names every module (a stale map sends a newcomer looking for
nothing)."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.docs import code_block, section

LAYOUT = "docs/layout.md"
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "mini_scheduler"
_CITED = re.compile(
    r"(?<![\w./-])((?:src|tests|benchmarks|samplecode|events)/[\w./-]*\w\.(?:py|json|yaml|toml|txt))"
)


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [ROOT / name for name in out.split("\0") if name]


def _texts() -> list[Path]:
    kinds = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg"}
    return [p for p in _tracked() if p.suffix in kinds or p.name in ("Makefile", "run")]


def test_every_file_a_tracked_text_cites_exists() -> None:
    missing = []
    for path in _texts():
        if not path.is_file():
            continue
        for cited in set(_CITED.findall(path.read_text(encoding="utf-8", errors="replace"))):
            if "*" in cited or "<" in cited:
                continue
            if not (ROOT / cited).exists():
                missing.append(f"{path.relative_to(ROOT)} cites {cited}")
    assert missing == []


def test_every_package_data_pattern_matches_a_file() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = config["tool"]["setuptools"].get("package-data", {})
    for package, patterns in data.items():
        where = ROOT / "src" / package.replace(".", "/")
        for pattern in patterns:
            assert list(where.glob(pattern)), f"package data {package}: {pattern} matches nothing"


def _layout() -> str:
    return code_block(section(LAYOUT, "Layout"))


def test_the_layout_names_every_module() -> None:
    layout = _layout()
    named = set(re.findall(r"[\w.]+\.py|[\w]+/", layout))
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py") or "__pycache__" in path.parts:
            continue
        if path.name not in named:
            missing.append(str(path.relative_to(PACKAGE)))
    folders = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    missing.extend(f"{name}/" for name in folders if f"{name}/" not in named)
    assert missing == [], f"{LAYOUT}'s Layout omits these (add a line saying what each does)"


def test_the_layout_names_no_module_that_is_gone() -> None:
    modules = {p.name for p in PACKAGE.rglob("*.py")}
    named = set(re.findall(r"\b[a-z_]+\.py\b", _layout()))
    assert named - modules == set()
