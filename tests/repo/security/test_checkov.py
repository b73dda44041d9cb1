"""checkov on template.yaml, as `make security` runs it: no failed check, offline.

A check that does not fit this stack is skipped in its resource's ``Metadata`` (``checkov: skip:
[{id, comment}]``) with the reason written there. The skips are held to account: each carries a
reason, and each is needed (without them checkov fails exactly the skipped checks, no more, so
the run is not vacuous and no skip hides a check it does not name).

checkov runs with the Makefile's CHECKOV_ENV and ``--skip-download``; the run here watches every
connection it tries to open (a Python audit hook on ``socket.connect`` and
``socket.getaddrinfo``), from a home directory of its own, so a cached answer cannot hide one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.repo.security import tools
from tests.repo.template import cfn

TEMPLATE = ROOT / "template.yaml"
_WATCHED = """
import runpy, sys
def _watch(event, args):
    if event in ("socket.connect", "socket.getaddrinfo"):
        sys.stderr.write(f"NETWORK {event} {args[1] if len(args) > 1 else args!r}\\n")
sys.addaudithook(_watch)
sys.argv = ["checkov", *sys.argv[1:]]
runpy.run_path(sys.argv.pop(1), run_name="__main__")
"""


@pytest.fixture(scope="session")
def security_tools() -> None:
    tools.ensure()


def _checkov(template: Path, home: Path) -> tuple[dict[str, Any], list[str]]:
    """checkov's JSON report on ``template`` (cloudformation), and the connections it tried."""
    args = [
        str(template) if arg == "template.yaml" else arg
        for arg in tools.CHECKOV_ARGS
        if arg != "--quiet"  # which would leave the passed and skipped checks out of the report
    ]
    home.mkdir(parents=True, exist_ok=True)
    done = tools.run(
        [tools.PYTHON, "-c", _WATCHED, tools.CHECKOV, *args, "--output", "json"],
        env={**tools.CHECKOV_ENV, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")},
        cwd=template.parent,
    )
    network = [line for line in done.stderr.splitlines() if line.startswith("NETWORK ")]
    assert done.returncode in (0, 1), tools.output(done)
    reports = json.loads(done.stdout)
    for report in reports if isinstance(reports, list) else [reports]:
        if report.get("check_type") == "cloudformation":
            return report, network
    raise AssertionError(f"no cloudformation report:\n{tools.output(done)}")


@pytest.fixture(scope="module")
def report(security_tools: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    found, network = _checkov(TEMPLATE, tmp_path_factory.mktemp("checkov-home"))
    assert network == [], "checkov tried to reach the network:\n" + "\n".join(network)
    return found


def _ids(checks: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(check["resource"].rsplit(".", 1)[-1], check["check_id"]) for check in checks}


def test_checkov_fails_no_check_and_reaches_no_network(report: dict[str, Any]) -> None:
    summary = report["summary"]
    failed = [
        f"{c['check_id']} {c['resource']}: {c['check_name']}"
        for c in report["results"]["failed_checks"]
    ]
    assert summary["failed"] == 0 and not failed, "\n".join(failed)
    assert summary["parsing_errors"] == 0
    assert summary["passed"] >= 40  # the IAM, KMS, SNS, log retention, runtime checks


def _skips(template: dict[str, Any]) -> dict[tuple[str, str], str]:
    found = {}
    for name, resource in template["Resources"].items():
        for skip in (resource.get("Metadata", {}).get("checkov", {}) or {}).get("skip", []):
            found[(name, skip.get("id", ""))] = str(skip.get("comment", ""))
    return found


def test_every_skip_names_a_check_and_says_why(report: dict[str, Any]) -> None:
    skips = _skips(cfn.load_template())
    assert skips, "no skip: then this test and the Metadata can go"
    for (resource, check), comment in skips.items():
        assert re.fullmatch(r"CKV2?_AWS_\d+", check), f"{resource}: {check!r} is not a check id"
        assert len(comment.split()) >= 8, f"{resource} {check}: say why it does not fit"
    skipped = {
        (c["resource"].rsplit(".", 1)[-1], c["check_id"]): c["check_result"].get("suppress_comment")
        for c in report["results"]["skipped_checks"]
    }
    assert skipped == skips, "checkov read other skips than template.yaml has"


def test_every_skip_is_needed(
    report: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Without the skips checkov fails exactly the checks they name: the run is not vacuous,
    and no skip is stale or hides another check."""
    text = TEMPLATE.read_text(encoding="utf-8")
    bare = re.sub(
        r"^(    Metadata:\n)?      checkov:\n        skip:\n(?:          .*\n)+",
        lambda found: "" if found.group(1) is None else found.group(1),
        text,
        flags=re.MULTILINE,
    )
    bare = re.sub(r"^    Metadata:\n(?=    \S)", "", bare, flags=re.MULTILINE)
    folder = tmp_path_factory.mktemp("bare")
    (folder / "template.yaml").write_text(bare, encoding="utf-8")
    assert _skips(cfn.load_template(folder / "template.yaml")) == {}
    found, _ = _checkov(folder / "template.yaml", folder / "home")
    assert _ids(found["results"]["failed_checks"]) == set(_skips(cfn.load_template()))
