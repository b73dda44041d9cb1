"""A clone is all a user has: nothing in the repository may lean on files beside it.

Every tracked file is read as text, and none may refer to the directory next to the repository
(``../shared``) or to a specification that is not in it (``DESIGN.md``): code would fail to find
them, and a comment citing them points a reader nowhere. The golden rows the cron tests read are
in ``tests/unit/cron/data``.
"""

from __future__ import annotations

import subprocess  # nosec B404 # runs git, with fixed arguments
from pathlib import Path

from tests.conftest import ROOT

OUTSIDE = ("../shared", "DESIGN.md")


def _tracked_files() -> list[Path]:
    listed = subprocess.run(  # nosec B603 B607 # git, fixed arguments, no shell
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / name for name in listed.split("\0") if name]


def _references(path: Path) -> list[str]:
    """Each line of ``path`` that names something outside the repository, as ``path:line``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError):  # binary, or deleted in the work tree
        return []
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), start=1)
        if any(outside in line for outside in OUTSIDE)
    ]


def test_the_golden_rows_are_tracked() -> None:
    """Also shows that the listing below is the repository's, not an empty answer."""
    golden = ROOT / "tests" / "unit" / "cron" / "data" / "quartz-golden-public.tsv"
    assert golden in _tracked_files()


def test_nothing_refers_to_files_beside_the_repository() -> None:
    this = Path(__file__).resolve()
    found = [ref for path in _tracked_files() if path != this for ref in _references(path)]
    assert found == []
