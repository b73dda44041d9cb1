"""bandit on src, as `make security` runs it: no finding.

A finding that is not a weakness is marked where it stands, ``# nosec <id> # <why>``: the id
names the one check it silences (a bare ``# nosec`` would silence every check on the line), and
the reason is written beside it. Each such mark is held to that form here.

bandit comes from .venv-sec (`make security-tools`, a prerequisite of `make test`): when it cannot
be installed these tests fail, unless SKIP_TOOL_TESTS=1 is set (see tests/maketools.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.repo.security import tools

SRC = ROOT / "src"
_NOSEC = re.compile(r"#\s*nosec\b(?P<rest>.*)$")
_JUSTIFIED = re.compile(r"\s+(?P<ids>B\d{3}(?:\s*,\s*B\d{3})*)\s+#\s+(?P<why>\S.{9,})")


@pytest.fixture(scope="module", autouse=True)
def security_tools() -> None:
    tools.ensure()


def _bandit(*targets: Path) -> dict[str, Any]:
    done = tools.run([tools.BANDIT, "--recursive", "--quiet", "--format", "json", *targets])
    assert done.returncode in (0, 1), tools.output(done)
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_bandit_finds_nothing_in_src() -> None:
    report = _bandit(SRC)
    findings = [
        f"{r['filename']}:{r['line_number']} {r['test_id']} {r['issue_text']}"
        for r in report["results"]
    ]
    assert findings == [], "\n".join(findings)
    assert report["errors"] == []


def test_every_nosec_names_its_check_and_says_why() -> None:
    marks = 0
    for path in sorted(SRC.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            found = _NOSEC.search(line)
            if found is None:
                continue
            marks += 1
            where = f"{path.relative_to(ROOT)}:{number}"
            assert _JUSTIFIED.fullmatch(found["rest"]), (
                f"{where}: write `# nosec <id> # <why>` (the id of the one check, and the "
                f"reason), not {found.group(0)!r}"
            )
    assert marks, "no nosec mark left: this test can go"


def test_bandit_is_not_vacuous(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        "import subprocess\n\n\ndef run(command: str) -> None:\n"
        "    subprocess.call(command, shell=True)\n    assert command\n",
        encoding="utf-8",
    )
    ids = {result["test_id"] for result in _bandit(tmp_path)["results"]}
    assert {"B602", "B101"} <= ids
