"""The template through AWS's own tools, offline: cfn-lint and `sam validate --lint` find nothing,
and `make build` builds every function without Docker, the chosen cron file at the ticker's root.

The tools live in .venv-sam (`make sam-tools`, a prerequisite of `make test`): when they cannot
be installed these tests fail, unless SKIP_TOOL_TESTS=1 is set (see tests/maketools.py)."""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import platform
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.conftest import ROOT
from tests.repo.template import cfn

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


def _build(build_dir: Path, cron_yaml: Path | None = None, *resources: str) -> str:
    """`make build`, into ``build_dir`` (not the developer's .aws-sam), with Docker unreachable;
    what it printed (the functions' make output is on sam build's stderr)."""
    arguments = " ".join(
        [*resources, "--build-dir", str(build_dir), "--cache-dir", str(build_dir.parent / "cache")]
    )
    command = ["make", "-s", "build", f"SAM_BUILD_ARGS={arguments}"]
    if cron_yaml is not None:
        command.append(f"CRON_YAML={cron_yaml}")
    done = cfn.run_tool(command, timeout=600)
    assert done.returncode == 0, _output(done)
    return done.stdout + done.stderr


def _build_all(folder: Path) -> None:
    (folder / "build.log").write_text(_build(folder / "build"), encoding="utf-8")


@pytest.fixture(scope="session")
def build(sam_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make build` of the whole template, once per test run (what it printed in build.log
    beside it)."""
    return cfn.shared(tmp_path_factory, "sam", _build_all) / "build"


_VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"


def _version(python: str | os.PathLike[str]) -> str | None:
    """``python``'s major.minor version, or None when it does not run (a pyenv shim for a version
    not selected, say)."""
    try:
        done = subprocess.run(
            [os.fspath(python), "-c", _VERSION],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _compile_python() -> str | None:
    """The interpreter src/Makefile compiles the packages with, as it picks it: COMPILE_PYTHON,
    or else the python3.13 on PATH; None when that is not a working Python 3.13."""
    candidate = os.environ.get("COMPILE_PYTHON", shutil.which("python3.13") or "")
    return candidate if candidate and _version(candidate) == "3.13" else None


def _pyc_flags(source: Path, tag: str) -> int | None:
    """The flags field of ``source``'s .pyc for ``tag`` (cpython-313, say): bit 0 hash-based,
    bit 1 check_source, so 1 is an unchecked-hash pyc. None when there is no such .pyc."""
    pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
    if not pyc.is_file():
        return None
    with pyc.open("rb") as handle:
        return int.from_bytes(handle.read(16)[4:8], "little")


def _badly_compiled(folder: Path, tag: str) -> list[str]:
    """The modules under ``folder`` without an unchecked-hash .pyc for ``tag``."""
    return [
        str(source.relative_to(folder))
        for source in sorted(folder.rglob("*.py"))
        if _pyc_flags(source, tag) != 1
    ]


def _not_for_lambda(package: Path) -> list[str]:
    """What the package holds of the local run, the CLI and the console (src/Makefile leaves
    them out)."""
    names = ("local", "cli", "cli.py", "console", "__main__.py")
    return [name for name in names if (package / "mini_scheduler" / name).exists()]


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
    # Wheels for the Lambda runtime, whatever this machine runs: every shared library is for
    # the functions' architecture (template.yaml's Architectures: arm64).
    assert list((ticker / "yaml").glob("_yaml.cpython-313-aarch64-linux-gnu.so"))
    libraries = list(ticker.rglob("*.so"))
    assert libraries and [lib for lib in libraries if _elf_machine(lib) != "aarch64"] == []
    assert (ticker / "cron.yaml").read_bytes() == (ROOT / "samplecode" / "cron.yaml").read_bytes()
    assert (build / "RecorderFunction" / "mini_scheduler" / "handlers" / "recorder.py").is_file()
    for function in ("TickerFunction", "RecorderFunction"):
        assert _not_for_lambda(build / function) == [], function
    assert (build / "SampleReportFunction" / "app.py").is_file()
    assert (build / "SampleReportFunction" / "aws_lambda_powertools").is_dir()
    assert (build / "SampleHeartbeatFunction" / "app.py").is_file()


def test_sam_build_compiles_the_packages_when_it_has_a_python_313(build: Path) -> None:
    """With a Python 3.13 (the runtime's: a .pyc is read only by the version that wrote it), every
    module of the ticker and recorder ships an unchecked-hash .pyc; without one, none does
    (not even this machine's __pycache__ from the source tree) and the build says so."""
    log = (build.parent / "build.log").read_text(encoding="utf-8")
    compiler = _compile_python()
    for function in ("TickerFunction", "RecorderFunction"):
        folder = build / function
        notice = f"NOTE: {function} ships without bytecode"
        if compiler is None:
            assert not list(folder.rglob("*.pyc")), function
            assert notice in log, log
        else:
            assert not _badly_compiled(folder, "cpython-313"), function
            assert notice not in log, log


def _lambda_build(artifacts: Path, *variables: str, **env: str) -> subprocess.CompletedProcess[str]:
    """src/Makefile's recipe for the recorder as sam build runs it (ARTIFACTS_DIR set), with
    ``variables`` (NAME=value) on make's command line."""
    return cfn.run_tool(
        ["make", "-C", "src", "build-RecorderFunction", f"ARTIFACTS_DIR={artifacts}", *variables],
        env=env,
        timeout=600,
    )


_THIS_VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_the_build_compiles_with_the_python_it_is_given(tmp_path: Path) -> None:
    """The compile step, whatever Python this machine has: the package for the Python of the SAM
    CLI's venv, compiled by it. Every module gets an unchecked-hash .pyc, and the package imports
    from that bytecode alone and writes nothing (as on Lambda's read-only /var/task)."""
    python = cfn.SAM_PYTHON
    version = _version(python)
    assert version is not None, python
    tag = f"cpython-{version.replace('.', '')}"
    artifacts = tmp_path / "RecorderFunction"
    done = _lambda_build(
        artifacts, f"LAMBDA_PYTHON={version}", f"BUILD_PYTHON={python}", f"COMPILE_PYTHON={python}"
    )
    assert done.returncode == 0, _output(done)
    assert "compileall" in done.stdout and "without bytecode" not in done.stdout, _output(done)
    assert (artifacts / "mini_scheduler" / "handlers").is_dir()
    assert _not_for_lambda(artifacts) == []
    ticker = artifacts / "mini_scheduler" / "handlers" / "ticker.py"
    pyc = ticker.parent / "__pycache__" / f"ticker.{tag}.pyc"
    assert _pyc_flags(ticker, tag) == 1
    assert _pyc_flags(artifacts / "botocore" / "client.py", tag) == 1
    assert not _badly_compiled(artifacts, tag)
    if version == _THIS_VERSION:
        # -s/-p: the file name recorded is /var/task's, whatever the build folder (the same
        # bytes from any build; an import shows the real path either way).
        data = pyc.read_bytes()
        assert data[:4] == importlib.util.MAGIC_NUMBER
        assert marshal.loads(data[16:]).co_filename == "/var/task/mini_scheduler/handlers/ticker.py"

    before = {path: path.stat().st_mtime_ns for path in artifacts.rglob("*")}
    script = (
        f"import sys; sys.path.insert(0, {str(artifacts)!r})\n"
        "import mini_scheduler.handlers.ticker as ticker\n"
        "print(ticker.__file__)\n"
    )
    done = subprocess.run(
        [python, "-I", "-B", "-v", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={"AWS_REGION": "us-east-1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, _output(done)
    assert done.stdout.strip() == str(ticker), _output(done)
    # python -v says "# code object from '<.pyc>'" for a module read from its bytecode, and
    # "# code object from <.py>" (no quotes) for one compiled from its source.
    compiled = [
        line
        for line in done.stderr.splitlines()
        if line.startswith(f"# code object from {artifacts}")
    ]
    assert not compiled, compiled[:10]
    assert f"# code object from '{pyc}'" in done.stderr
    assert {path: path.stat().st_mtime_ns for path in artifacts.rglob("*")} == before


@pytest.mark.parametrize(
    ("variable", "path", "why"),
    [
        (f"COMPILE_PYTHON={sys.executable}", None, f"{sys.executable} is Python {_THIS_VERSION}"),
        ("COMPILE_PYTHON=/nonexistent/python3.13", None, "/nonexistent/python3.13 does not run"),
        ("COMPILE_PYTHON=", None, "COMPILE_PYTHON is empty"),
        (None, "/usr/bin:/bin", "no python3.13 on PATH"),
    ],
)
def test_the_build_says_when_it_ships_no_bytecode(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str | None,
    path: str | None,
    why: str,
) -> None:
    """Without a Python 3.13 to compile with, the recipe compiles nothing and says so: why, and
    what to do (make -n: what it would run, nothing downloaded)."""
    for name in ("COMPILE_PYTHON", "LAMBDA_PYTHON", "MAKEFLAGS"):  # only this test's settings
        monkeypatch.delenv(name, raising=False)
    if variable == f"COMPILE_PYTHON={sys.executable}" and _THIS_VERSION == "3.13":
        pytest.skip("this interpreter is a Python 3.13")
    if path is not None and any(Path(d, "python3.13").exists() for d in path.split(":")):
        pytest.skip(f"{path} has a python3.13")
    artifacts = tmp_path / "RecorderFunction"
    done = _lambda_build(
        artifacts, "-n", *filter(None, [variable]), **({"PATH": path} if path else {})
    )
    assert done.returncode == 0, _output(done)
    assert "compileall" not in done.stdout, _output(done)
    assert (
        "NOTE: RecorderFunction ships without bytecode, so every cold start compiles each module"
        f" it imports: {why}. Install Python 3.13, or set COMPILE_PYTHON=/path/to/python3.13."
    ) in done.stdout, _output(done)
    assert not artifacts.exists()


def test_the_package_runs_on_the_lambda_python(build: Path) -> None:
    """The ticker's package, alone on the path (as in /var/task), imports its handlers, builds
    the ticker and the recorder (their lazy imports too: nothing the build left out is needed),
    and finds its cron file where CRON_FILE's default says: file:cron.yaml under LAMBDA_TASK_ROOT.
    -B: it writes no bytecode, as on Lambda's read-only /var/task (and the build other tests
    look at stays as make build left it)."""
    ticker = build / "TickerFunction"
    python = cfn.python_for_lambda()
    script = (
        "import sys, yaml\n"
        "import mini_scheduler.handlers.ticker, mini_scheduler.handlers.recorder\n"
        "from mini_scheduler.config import Settings\n"
        "from mini_scheduler.aws import Clients\n"
        "from mini_scheduler.wiring import build_recorder, build_ticker, cron_source\n"
        "settings = Settings.from_environment()\n"
        "cron = cron_source(settings, Clients('us-east-1'))()\n"
        "build_ticker(settings, account='123456789012'), build_recorder(settings)\n"
        "print(sys.version_info[:2], yaml.__with_libyaml__, sorted(j.name for j in cron.jobs))\n"
    )
    done = subprocess.run(
        [python, "-I", "-B", "-c", f"import sys; sys.path.insert(0, {str(ticker)!r})\n{script}"],
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
    if "(3, 13)" in done.stdout and platform.machine() == "aarch64":
        # the runtime's interpreter on the runtime's machine: the binary wheels load too
        assert "True" in done.stdout, done.stdout


def _elf_machine(path: Path) -> str:
    """The machine an ELF shared library is built for (its header's e_machine)."""
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", path
    machine = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
    return {62: "x86_64", 183: "aarch64"}.get(machine, str(machine))


def test_make_build_packages_the_chosen_cron_file(sam_tools: None, tmp_path: Path) -> None:
    mine = tmp_path / "my-cron.yaml"
    mine.write_text(
        'jobs:\n  - name: "mine"\n    cron: "0 0 * * * ?"\n    service: "mini-scheduler-x"\n'
    )
    _build(tmp_path / "build", mine, "TickerFunction")
    assert (tmp_path / "build" / "TickerFunction" / "cron.yaml").read_bytes() == mine.read_bytes()


def test_make_build_refuses_a_cron_file_with_an_invalid_entry(
    sam_tools: None, tmp_path: Path
) -> None:
    """Through sam build and the ticker's makefile build, as deployed: the check runs with the
    package's own dependencies, and sam build fails instead of saying Build Succeeded."""
    bad = tmp_path / "bad.yaml"
    bad.write_text('jobs:\n  - {name: "a", cron: "0 0 25 * * ?", service: "mini-scheduler-x"}\n')
    arguments = f"TickerFunction --build-dir {tmp_path / 'build'} --cache-dir {tmp_path / 'c'}"
    done = cfn.run_tool(
        ["make", "-s", "build", f"CRON_YAML={bad}", f"SAM_BUILD_ARGS={arguments}"], timeout=600
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, _output(done)
    assert "Invalid job entry#1 (a) - check name, schedule and service: Bad hour" in output
    assert "Build Succeeded" not in output
    assert not (tmp_path / "build" / "TickerFunction" / "cron.yaml").exists()


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
