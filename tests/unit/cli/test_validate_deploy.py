"""`validate --deploy`: a target the deployed ticker's role may not invoke fails the file, as
`make build` runs it (outside the target prefixes, an ARN of another region or account)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mini_scheduler.cli.files import Grant, target_problem
from mini_scheduler.cli.main import main
from mini_scheduler.clock import FixedClock
from mini_scheduler.jobs import Target
from tests.conftest import ROOT
from tests.unit.jobs.helpers import BASE, document

SAMPLE = ROOT / "samplecode" / "cron.yaml"
CLOCK = FixedClock(datetime(2026, 3, 7, 12, 0, 7, tzinfo=UTC))
BOTH = ("us-east-1", "us-west-2")
ACCOUNT = "123456789012"
GRANT = Grant("mini-scheduler-", "mini-scheduler-", BOTH, ACCOUNT)


def run(capsys: pytest.CaptureFixture[str], *argv: str, **env: str) -> tuple[int, str, str]:
    code = main(list(argv), clock=CLOCK, environ=env)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("lambda", "mini-scheduler-report"),
        ("lambda", "mini-scheduler-report:live"),
        ("lambda", f"{ACCOUNT}:function:mini-scheduler-report:3"),
        ("flow", "mini-scheduler-cleanup"),
    ],
    ids=["name", "alias", "partial-arn", "flow"],
)
def test_a_target_the_role_may_invoke(kind: str, name: str) -> None:
    assert target_problem(Target(kind, name), GRANT) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "name", "reason"),
    [
        ("lambda", "report", "may invoke only functions named mini-scheduler-* "),
        ("lambda", "report:live", "may invoke only functions named mini-scheduler-* "),
        ("flow", "cleanup", "may start only state machines named mini-scheduler-* "),
        (
            "lambda",
            f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:mini-scheduler-report",
            "its ARN is in us-east-1, and the ticker in us-west-2 may invoke only its own "
            "region's functions: name it without the ARN, and deploy it in every region",
        ),
        (
            "flow",
            f"arn:aws:states:us-west-2:{ACCOUNT}:stateMachine:mini-scheduler-cleanup",
            "its ARN is in us-west-2, and the ticker in us-east-1 may start only",
        ),
        (
            "lambda",
            "111111111111:function:mini-scheduler-report",
            f"it is in account 111111111111, and the ticker may invoke only account {ACCOUNT}'s",
        ),
    ],
    ids=["name", "alias", "flow", "arn-east", "flow-arn-west", "account"],
)
def test_a_target_the_role_may_not_invoke(kind: str, name: str, reason: str) -> None:
    problem = target_problem(Target(kind, name), GRANT)  # type: ignore[arg-type]
    assert problem is not None and reason in problem, problem


def test_an_arn_in_the_one_region_deployed_is_fine_and_no_account_is_not_checked() -> None:
    east = Grant(regions=("us-east-1",))
    arn = "arn:aws:lambda:us-east-1:111111111111:function:mini-scheduler-report"
    assert target_problem(Target("lambda", arn), east) is None


def test_the_sample_deploys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate", str(SAMPLE), "--deploy", "--regions", ",".join(BOTH))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == (
        f"{SAMPLE}: 3 jobs loaded, 0 entries skipped; every target can be run "
        "(TargetFunctionPrefix mini-scheduler-, TargetStateMachinePrefix mini-scheduler-, "
        "in us-east-1, us-west-2)"
    )


def test_validate_deploy_fails_on_a_target_outside_the_prefix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Plain validate accepts it (the local run may invoke anything); --deploy does not."""
    path = tmp_path / "cron.yaml"
    path.write_text(
        document(
            {**BASE, "name": "mine", "service": "mini-scheduler-report"},
            {**BASE, "name": "theirs", "service": "report-fn"},
        )
    )
    assert run(capsys, "validate", str(path))[0] == 0
    code, out, _ = run(capsys, "validate", str(path), "--deploy", AWS_REGION="eu-west-1")
    assert code == 1
    assert [line for line in out.splitlines() if not line.startswith("INFO")] == [
        "ERROR   Job theirs: the deployed ticker cannot run report-fn - the ticker may invoke "
        "only functions named mini-scheduler-* (TargetFunctionPrefix): rename it, or deploy "
        "with TargetFunctionPrefix set to a prefix of report-fn",
        f"{path}: 2 jobs loaded, 0 entries skipped; 1 target the deployed ticker cannot run "
        "(TargetFunctionPrefix mini-scheduler-, TargetStateMachinePrefix mini-scheduler-, in "
        "eu-west-1)",
    ]
    # the stack's own prefix
    code, _, _ = run(
        capsys, "validate", str(path), "--deploy", "--function-prefix", "", AWS_REGION="eu-west-1"
    )
    assert code == 2
    code, _, _ = run(
        capsys,
        "validate",
        str(path),
        "--deploy",
        "--function-prefix",
        "re",
        "--regions",
        "eu-west-1",
    )
    assert code == 1  # mine is now outside
    code, _, _ = run(
        capsys,
        "validate",
        str(path),
        "--deploy",
        "--function-prefix",
        "-",
        "--regions",
        "eu-west-1",
    )
    assert code == 1


def test_validate_deploy_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text(document({**BASE, "service": "flow://cleanup"}))
    code, out, _ = run(
        capsys,
        "validate",
        str(path),
        "--deploy",
        "--json",
        "--regions",
        "us-east-1",
        "--account",
        ACCOUNT,
        "--state-machine-prefix",
        "clean",
    )
    report = json.loads(out)
    assert code == 0 and report["ok"] is True
    assert report["deploy"] == {
        "functionPrefix": "mini-scheduler-",
        "stateMachinePrefix": "clean",
        "regions": ["us-east-1"],
        "account": ACCOUNT,
        "targetsRefused": 0,
    }


def test_validate_deploy_needs_the_regions(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "validate", str(SAMPLE), "--deploy")
    assert code == 2
    assert err == (
        "mini-scheduler validate: --deploy: give --regions (every region the file goes to)\n"
    )
    code, _, err = run(capsys, "validate", str(SAMPLE), "--deploy", "--regions", "east")
    assert code == 2 and "not an AWS region: 'east'" in err
    code, _, err = run(capsys, "validate", str(SAMPLE), "--deploy", "--account", "12")
    assert code == 2 and "not an AWS account id: '12'" in err


def test_validate_deploy_holds_the_other_kinds_to_their_prefix_parameters(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A queue, a topic or a bus loads anywhere; --deploy refuses a kind whose prefix is not
    given (off, as the template's default is), and a name outside the prefix given."""
    path = tmp_path / "cron.yaml"
    path.write_text(
        document(
            {**BASE, "name": "queue", "service": "sqs://mini-work"},
            {**BASE, "name": "bus", "service": "events://default"},
        )
    )
    assert run(capsys, "validate", str(path))[0] == 0
    code, out, _ = run(capsys, "validate", str(path), "--deploy", AWS_REGION="eu-west-1")
    assert code == 1
    assert "sqs targets are off in this deployment - set the template parameter " in out
    assert "TargetQueuePrefix" in out and "TargetEventBusPrefix" in out
    both = ["--target-prefix", "sqs=mini-", "--target-prefix", "events=default"]
    assert run(capsys, "validate", str(path), "--deploy", *both, AWS_REGION="eu-west-1")[0] == 0
    code, out, _ = run(
        capsys,
        "validate",
        str(path),
        "--deploy",
        "--target-prefix",
        "sqs=other-",
        "--target-prefix",
        "events=default",
        AWS_REGION="eu-west-1",
    )
    assert code == 1 and "is outside TargetQueuePrefix 'other-'" in out
    code, _, err = run(
        capsys, "validate", str(path), "--deploy", "--target-prefix", "kafka=x", AWS_REGION="x"
    )
    assert code == 2 and "not KIND=PREFIX" in err
