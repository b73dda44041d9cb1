"""The Makefile's deploy, without AWS: the cron file is checked by the function's own build
recipe (src/Makefile, as `sam build` runs it), and `make deploy` deploys one build to both
regions with each one's name, refusing what would make the DR stack a second primary
(`make -n`: what it would run, nothing run)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.maketools import run

SAMPLE = ROOT / "samplecode" / "cron.yaml"


def check(cron_yaml: Path, *variables: str) -> tuple[int, str]:
    """src/Makefile's check-cron-file with this interpreter (its dependencies on its path)."""
    done = run(
        [
            "make",
            "-s",
            "-C",
            "src",
            "check-cron-file",
            f"MINI_SCHEDULER_CRON_YAML={cron_yaml}",
            f"BUILD_PYTHON={sys.executable}",
            "CHECK_PATH=",
            *variables,
        ],
        env={"MAKEFLAGS": ""},
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_sample_ships(tmp_path: Path) -> None:
    code, output = check(SAMPLE)
    assert code == 0, output
    assert "3 jobs loaded, 0 entries skipped; every target can be run" in output


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("jobs: [\n", "is not valid YAML"),
        (
            'jobs:\n  - {name: "ok", cron: "0 0 * * * ?", service: "mini-scheduler-x"}\n'
            '  - {name: "bad", cron: "0 0 25 * * ?", service: "mini-scheduler-x"}\n',
            "Invalid job entry#2 (bad) - check name, schedule and service: Bad hour",
        ),
        (
            'jobs:\n  - {name: "theirs", cron: "0 0 * * * ?", service: "report-fn"}\n',
            "Job theirs: the deployed ticker cannot run report-fn - the ticker may invoke only "
            "functions named mini-scheduler-* (TargetFunctionPrefix)",
        ),
        (
            'jobs:\n  - {name: "east", cron: "0 0 * * * ?", service: '
            '"arn:aws:lambda:us-east-1:123456789012:function:mini-scheduler-x"}\n',
            "its ARN is in us-east-1, and the ticker in us-west-2 may invoke only",
        ),
    ],
    ids=["not-yaml", "one-invalid-entry", "outside-the-prefix", "another-region-s-arn"],
)
def test_a_cron_file_that_cannot_ship_fails_the_build(tmp_path: Path, text: str, said: str) -> None:
    bad = tmp_path / "cron.yaml"
    bad.write_text(text)
    code, output = check(bad)
    assert code != 0, output
    assert said in output, output
    assert f"The cron file {bad} cannot ship: fix what is listed above" in output


def test_the_check_takes_the_stack_s_prefixes_and_regions(tmp_path: Path) -> None:
    mine = tmp_path / "cron.yaml"
    mine.write_text('jobs:\n  - {name: "report", cron: "0 0 * * * ?", service: "ops-report"}\n')
    assert check(mine)[0] != 0
    assert check(mine, "TARGET_FUNCTION_PREFIX=ops-")[0] == 0
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:mini-scheduler-x"
    mine.write_text(f'jobs:\n  - {{name: "report", cron: "0 0 * * * ?", service: "{arn}"}}\n')
    assert check(mine, "CHECK_REGIONS=eu-west-1")[0] == 0


def test_a_warning_fails_the_build_unless_strict_is_0(tmp_path: Path) -> None:
    """A typo that would silently mean the default (`overlapp: skip`, `retry: {backof: 2}`)
    fails the build, each warning printed and the opt-out spelled; STRICT=0 ships it."""
    typo = tmp_path / "cron.yaml"
    typo.write_text(
        'jobs:\n  - {name: "a", cron: "0 0 * * * ?", service: "mini-scheduler-x",'
        " overlapp: skip, retry: {retries: 2, backof: 2}}\n"
    )
    code, output = check(typo)
    assert code != 0, output
    assert "Job a key overlapp ignored - did you mean overlap? (a warning: --strict)" in output
    assert "Job a key retry.backof ignored - did you mean retry.backoff?" in output
    assert "a warning fails the build too (make build STRICT=0 ships warnings)" in output
    code, output = check(typo, "STRICT=0")
    assert code == 0, output
    assert "1 job loaded, 0 entries skipped (2 warnings)" in output


def test_the_ticker_s_build_checks_the_file_it_packages(tmp_path: Path) -> None:
    """What sam build runs for the ticker (make -n): the dependencies, then the check with them
    on the path, then the copy; the check can fail the build before the file is copied."""
    done = run(
        [
            "make",
            "-n",
            "-C",
            "src",
            "build-TickerFunction",
            f"ARTIFACTS_DIR={tmp_path / 'TickerFunction'}",
            f"MINI_SCHEDULER_CRON_YAML={SAMPLE}",
        ],
        env={"MAKEFLAGS": ""},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    (install,) = [i for i, line in enumerate(lines) if "pip install" in line]
    (checked,) = [i for i, line in enumerate(lines) if "validate --strict --deploy" in line]
    (copied,) = [
        i for i, line in enumerate(lines) if line.startswith("cp ") and "cron.yaml" in line
    ]
    assert install < checked < copied
    assert f'PYTHONPATH="{ROOT / "src"}:{tmp_path / "TickerFunction"}"' in lines[checked]


def deploy(*variables: str, target: str = "deploy") -> tuple[int, list[str], str]:
    done = run(["make", "-n", target, *variables], env={"MAKEFLAGS": ""})
    return done.returncode, done.stdout.splitlines(), done.stderr


def test_make_deploy_deploys_one_build_to_both_regions_with_their_names() -> None:
    code, lines, err = deploy("CRON_YAML=my/cron.yaml", "PARAMETERS=AlarmEmail=ops@example.com")
    assert code == 0, err
    builds = [line for line in lines if "sam build" in line]
    deploys = [line.split() for line in lines if "sam deploy" in line]
    assert len(builds) == 1
    assert any("cron.yaml" in line and "MINI_SCHEDULER_CRON_YAML" in line for line in lines)
    assert [(d[d.index("--config-env") + 1], d[d.index("--region") + 1]) for d in deploys] == [
        ("dr", "us-west-2"),
        ("prod", "us-east-1"),
    ]
    dr, prod = deploys
    assert "EnvironmentName=DR" in dr and "EnvironmentName=prod" in prod
    assert "PeerRegions=us-east-1" in dr and "PeerRegions=us-west-2" in prod  # each the other
    for one in deploys:
        assert one[one.index("--parameter-overrides") + 1 :] == [
            one[one.index("--parameter-overrides") + 1],
            "KnownEnvironments=prod,DR",  # each region knows both names, as they are here
            one[one.index("--parameter-overrides") + 3],
            "TargetFunctionPrefix=mini-scheduler-",
            "TargetStateMachinePrefix=mini-scheduler-",
            "AlarmEmail=ops@example.com",
        ]


def test_make_build_passes_strict_to_the_function_s_build() -> None:
    """sam build runs src/Makefile with make build's environment: strict unless STRICT=0."""
    for variables, passed in (((), 'STRICT="1"'), (("STRICT=0",), 'STRICT="0"')):
        code, lines, err = deploy(*variables, target="build")
        assert code == 0, err
        recipe = "\n".join(lines).split("sam build")[0].rsplit("MINI_SCHEDULER_CRON_YAML=", 1)[-1]
        assert passed in recipe, recipe  # the variables of the sam build command (one recipe)


def test_each_region_gets_its_own_cron_file_location() -> None:
    code, lines, err = deploy(
        "DR_CRON_FILE=s3://jobs-us-west-2/cron.yaml,file:cron.yaml",
        "PRIMARY_CRON_FILE=s3://jobs-us-east-1/cron.yaml,file:cron.yaml",
    )
    assert code == 0, err
    dr, prod = [line for line in lines if "sam deploy" in line]
    assert "CronFile=s3://jobs-us-west-2/cron.yaml,file:cron.yaml" in dr.split()
    assert "CronFile=s3://jobs-us-east-1/cron.yaml,file:cron.yaml" in prod.split()


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        (
            ["DEPLOY_ARGS=--parameter-overrides EnvironmentName=prod"],
            "DEPLOY_ARGS may not hold --parameter-overrides: make deploy sets each region's",
        ),
        (["DEPLOY_ARGS=--region us-east-1"], "DEPLOY_ARGS may not hold --region"),
        (["PARAMETERS=EnvironmentName=DR"], "PARAMETERS may not set EnvironmentName"),
        (["PARAMETERS=KnownEnvironments=prod"], "PARAMETERS may not set KnownEnvironments"),
        (["PARAMETERS=CronFile=s3://one-bucket/cron.yaml"], "PARAMETERS may not set CronFile"),
        (
            ["DR_ENVIRONMENT=PROD"],
            "DR_ENVIRONMENT=PROD is the primary's name (prod): both regions would be active",
        ),
        (["DR_REGION=us-east-1"], "DR_REGION=us-east-1 is the primary's region"),
    ],
    ids=[
        "parameter-overrides",
        "region",
        "environment",
        "known-environments",
        "one-cron-file",
        "dr-named-prod",
        "one-region",
    ],
)
def test_make_deploy_refuses_a_second_primary(variables: list[str], said: str) -> None:
    """Before anything is built (the refusal comes first: nothing but it in the output)."""
    for target in ("deploy", "deploy-dr"):
        code, lines, err = deploy(*variables, target=target)
        assert code != 0
        assert said in err, err
        assert not any("sam build" in line for line in lines)


def test_the_makefile_s_regions_are_samconfig_s() -> None:
    """samconfig.toml serves `sam deploy --config-env` by hand: the same regions and names."""
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    src = (ROOT / "src" / "Makefile").read_text(encoding="utf-8")
    for env, region_var, name_var in (
        ("prod", "PRIMARY_REGION", "PRIMARY_ENVIRONMENT"),
        ("dr", "DR_REGION", "DR_ENVIRONMENT"),
    ):
        deploy_parameters = config[env]["deploy"]["parameters"]
        region = deploy_parameters["region"]
        overrides = dict(o.split("=", 1) for o in deploy_parameters["parameter_overrides"].split())
        name = overrides["EnvironmentName"]
        other = config["dr" if env == "prod" else "prod"]["deploy"]["parameters"]["region"]
        assert overrides["PeerRegions"] == other  # each stack names the other's region
        assert f"{region_var} " in makefile and f"?= {region}\n" in makefile
        assert any(line.split() == [name_var, "?=", name] for line in makefile.splitlines()), (
            name_var
        )
        assert region in src.split("CHECK_REGIONS", 1)[1].splitlines()[0]
