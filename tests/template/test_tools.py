"""The template through AWS's own tools, offline: cfn-lint and `sam validate --lint` find nothing,
and `make build` builds every function without Docker, the chosen cron file at the ticker's root.

The tools live in .venv-sam (`make sam-tools`, a prerequisite of `make test`); a test is skipped
only when they cannot be installed."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import ROOT
from tests.template import cfn

pytestmark = pytest.mark.usefixtures("sam_tools")


def _output(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def test_cfn_lint_finds_nothing_in_either_region() -> None:
    """Exit 0: no error, no warning, not even an informational finding (as make
    validate-template runs it)."""
    done = cfn.run_tool(
        [
            cfn.CFN_LINT,
            "--include-checks",
            "I",
            "--regions",
            "us-east-1",
            "us-west-2",
            "--",
            cfn.TEMPLATE,
        ],
        timeout=300,
    )
    assert done.returncode == 0, _output(done)


def test_cfn_lint_finds_a_mistake(tmp_path: Path) -> None:
    """The check above is not vacuous: a property that does not exist fails it."""
    broken = tmp_path / "template.yaml"
    text = cfn.TEMPLATE.read_text(encoding="utf-8")
    broken.write_text(text.replace("      Timeout: 150\n", "      Timeout: 150\n      Tmeout: 1\n"))
    done = cfn.run_tool([cfn.CFN_LINT, "--", broken], timeout=300)
    assert done.returncode != 0 and "Tmeout" in done.stdout, _output(done)


def _flow_template(definition: dict[str, object]) -> dict[str, object]:
    flow = cfn.load_template()["Resources"]["SampleCleanupFlow"]["Properties"]
    substitutions = {
        name: f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        for name in flow["DefinitionSubstitutions"]
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {
            "Flow": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": "arn:aws:iam::123456789012:role/flow",
                    "Definition": definition,
                    "DefinitionSubstitutions": substitutions,
                },
            }
        },
    }


def test_cfn_lint_checks_the_sample_flow(tmp_path: Path) -> None:
    """cfn-lint validates a state machine's definition only when it is in the template, not in a
    DefinitionUri file: lint the ASL file as an inline definition (and see a mistake caught)."""
    path = cfn.load_template()["Resources"]["SampleCleanupFlow"]["Properties"]["DefinitionUri"]
    definition = json.loads((ROOT / path).read_text(encoding="utf-8"))
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_flow_template(definition)))
    definition["States"]["Clean"]["Retry"][0]["MaxAttempts"] = "three"
    bad.write_text(json.dumps(_flow_template(definition)))
    done = cfn.run_tool([cfn.CFN_LINT, "--include-checks", "I", "--", good], timeout=300)
    assert done.returncode == 0, _output(done)
    done = cfn.run_tool([cfn.CFN_LINT, "--", bad], timeout=300)
    assert done.returncode != 0 and "three" in done.stdout, _output(done)


def test_sam_validate_lint() -> None:
    done = cfn.run_tool(
        [cfn.SAM, "validate", "--lint", "--region", "us-east-1", "--template", cfn.TEMPLATE],
        timeout=300,
    )
    assert done.returncode == 0, _output(done)
    assert "is a valid SAM Template" in done.stdout + done.stderr


def _build(build_dir: Path, cron_yaml: Path | None = None, *resources: str) -> None:
    """`make build`, into ``build_dir`` (not the developer's .aws-sam), with Docker unreachable."""
    arguments = " ".join(
        [*resources, "--build-dir", str(build_dir), "--cache-dir", str(build_dir.parent / "cache")]
    )
    command = ["make", "-s", "build", f"SAM_BUILD_ARGS={arguments}"]
    if cron_yaml is not None:
        command.append(f"CRON_YAML={cron_yaml}")
    done = cfn.run_tool(command, timeout=600)
    assert done.returncode == 0, _output(done)


@pytest.fixture(scope="session")
def build(sam_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make build` of the whole template, once per test run."""
    return cfn.shared(tmp_path_factory, "sam", lambda folder: _build(folder / "build")) / "build"


def test_sam_build_packages_every_function_without_docker(build: Path) -> None:
    assert (build / "template.yaml").is_file()
    ticker = build / "TickerFunction"
    for package in (
        "mini_scheduler",
        "boto3",
        "aws_lambda_powertools",
        "yaml",
        "tzdata",
        "pymongo",
    ):
        assert (ticker / package).is_dir(), package
    # Wheels for the Lambda runtime, whatever this machine runs.
    assert list((ticker / "yaml").glob("_yaml.cpython-313-x86_64-linux-gnu.so"))
    assert not list(ticker.rglob("__pycache__"))
    assert (ticker / "cron.yaml").read_bytes() == (ROOT / "samplecode" / "cron.yaml").read_bytes()
    assert (build / "RecorderFunction" / "mini_scheduler" / "handlers" / "recorder.py").is_file()
    assert (build / "SampleReportFunction" / "app.py").is_file()
    assert (build / "SampleReportFunction" / "aws_lambda_powertools").is_dir()
    assert (build / "SampleHeartbeatFunction" / "app.py").is_file()


def test_the_package_runs_on_the_lambda_python(build: Path) -> None:
    """The ticker's package, alone on the path (as in /var/task), imports its handlers and
    finds its cron file where CRON_FILE's default says: file:cron.yaml under LAMBDA_TASK_ROOT."""
    ticker = build / "TickerFunction"
    python = cfn.python_for_lambda()
    script = (
        "import sys, yaml\n"
        "import mini_scheduler.handlers.ticker, mini_scheduler.handlers.recorder\n"
        "from mini_scheduler.config import Settings\n"
        "from mini_scheduler.wiring import Clients, cron_source\n"
        "cron = cron_source(Settings.from_environment(), Clients('us-east-1'))()\n"
        "print(sys.version_info[:2], yaml.__with_libyaml__, sorted(j.name for j in cron.jobs))\n"
    )
    done = subprocess.run(
        [python, "-I", "-c", f"import sys; sys.path.insert(0, {str(ticker)!r})\n{script}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ticker,
        env={
            "LAMBDA_TASK_ROOT": str(ticker),
            "STATE_TABLE": "state",
            "AWS_REGION": "us-east-1",
            "PATH": "/usr/bin:/bin",
        },
    )
    assert done.returncode == 0, _output(done)
    assert "['heartbeat', 'hourly-cleanup', 'morning-report']" in done.stdout, done.stdout
    if "(3, 13)" in done.stdout:  # the runtime's interpreter: the binary wheels load too
        assert "True" in done.stdout, done.stdout


def test_make_build_packages_the_chosen_cron_file(sam_tools: None, tmp_path: Path) -> None:
    mine = tmp_path / "my-cron.yaml"
    mine.write_text(
        'jobs:\n  - name: "mine"\n    cron: "0 0 * * * ?"\n    service: "mini-scheduler-x"\n'
    )
    _build(tmp_path / "build", mine, "TickerFunction")
    assert (tmp_path / "build" / "TickerFunction" / "cron.yaml").read_bytes() == mine.read_bytes()


def test_make_build_refuses_a_missing_cron_file(sam_tools: None, tmp_path: Path) -> None:
    done = cfn.run_tool(["make", "-s", "build", f"CRON_YAML={tmp_path / 'none.yaml'}"])
    assert done.returncode != 0 and "no such file" in done.stderr, _output(done)


def test_the_function_requirements_satisfy_pyproject() -> None:
    """src/requirements.txt pins what pyproject.toml asks for (and its mongodb extra)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for r in project["optional-dependencies"]["mongodb"]]
    pinned: dict[str, str] = {}
    for line in (ROOT / "src" / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", line
            pinned[requirement.name.lower().replace("_", "-")] = specifier.version
    for requirement in wanted:
        name = requirement.name.lower().replace("_", "-")
        assert name in pinned, f"{requirement} is not in src/requirements.txt"
        assert requirement.specifier.contains(pinned[name]), (
            f"{name}=={pinned[name]} !~ {requirement}"
        )
