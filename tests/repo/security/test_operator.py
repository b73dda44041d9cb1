"""The operator who asks is validated and bounded: required, 1-128 letters, digits, '.', '_', '-'
and '@' (surrounding white space aside), on every event that takes one: a manual run, pause,
resume, setting the environment. Anything else is refused with a clear error, nothing written;
so an operator can never forge a log line (a newline), hide behind a look-alike letter, or fill a
record with megabytes. The error echoes at most a bounded part of what was sent."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_scheduler.errors import EventError
from mini_scheduler.operator import check_operator
from tests.system.fuzz.conftest import Judge
from tests.system.integration.conftest import Aws

Invoke = Callable[[Any], dict[str, Any]]
VALID = re.compile(r"[A-Za-z0-9._@-]{1,128}")
ALLOWED = "abcxyzABCXYZ0189._@-"

BAD: list[Any] = [
    None,
    "",
    "   ",
    5,
    True,
    ["jane.doe"],
    {"name": "jane.doe"},
    "jane doe",
    "jane.doe\nINFO Operator admin runs everything manually",
    "jane\tdoe",
    "x" * 129,
    " " + "x" * 129,
    "j\u00e4ne",  # a letter, but not ASCII
    "j\u0430ne",  # Cyrillic a, a look-alike
    "\uff4a\uff41\uff4e\uff45",  # full-width letters
    "jane.doe\u200b",  # zero-width space
    "jane/doe",
    "jane:doe",
    "jane+ops@example.com",
    "<script>",
    "jane.doe\x00",
    "\ud800",
    "x" * 1_000_000,
]
GOOD = ["j", "x" * 128, " jane.doe ", "\tjane.doe\n", "A-Z.a_z@0-9", "jane.doe@example.com"]
IDS = [f"{i}-{str(v)[:12]!r}" for i, v in enumerate(BAD)]


def _events(operator: Any) -> dict[str, dict[str, Any]]:
    return {
        "manual run": {"job": "morning-report", "operator": operator},
        "pause": {"pause": "morning-report", "operator": operator},
        "resume": {"resume": "morning-report", "operator": operator},
        "environment": {"environment": {"active": "DR", "operator": operator}},
    }


@settings(max_examples=1000, deadline=None)
@given(
    st.one_of(
        st.text(max_size=140),
        st.text(alphabet=ALLOWED, min_size=120, max_size=136),
        st.from_regex(VALID, fullmatch=True),
        st.from_regex(VALID, fullmatch=True).map(lambda s: f" {s}\t"),
        st.none(),
        st.integers(),
        st.lists(st.text(max_size=3), max_size=2),
    )
)
def test_an_operator_is_accepted_exactly_when_it_is_a_bounded_name(operator: Any) -> None:
    valid = isinstance(operator, str) and VALID.fullmatch(operator.strip()) is not None
    try:
        accepted = check_operator(operator)
    except EventError as exc:
        assert not valid, f"{operator!r} refused: {exc}"
        assert len(str(exc)) <= 300, "the error echoes a bounded part of the operator"
        return
    assert valid, f"{operator!r} accepted as {accepted!r}"
    assert accepted == operator.strip()


@pytest.mark.dynamodb_local
def test_every_event_refuses_a_bad_operator_and_writes_nothing(
    aws: Aws, invoke_ticker: Invoke
) -> None:
    judge = Judge(aws)
    problems = []
    for operator, label in zip(BAD, IDS, strict=True):
        for kind, event in _events(operator).items():
            answer = judge(invoke_ticker, event)
            error = str(answer.get("error"))
            if answer.get("status") != "rejected" or "operator" not in error:
                problems.append(f"{kind} by {label}: {answer}")
            elif len(error) > 300:
                problems.append(f"{kind} by {label}: the error echoes {len(error)} characters")
    assert not problems, "\n".join(problems)


@pytest.mark.dynamodb_local
def test_every_event_takes_a_good_operator_and_records_it_trimmed(
    aws: Aws, invoke_ticker: Invoke
) -> None:
    judge = Judge(aws)
    for operator in GOOD:
        name = operator.strip()
        events = _events(operator)
        manual = judge(invoke_ticker, events["manual run"])
        assert manual["status"] == "DISPATCHED" and manual["operator"] == name
        run = aws.store().run(manual["firingId"])
        assert run is not None and run.operator == name
        paused = judge(invoke_ticker, events["pause"])
        assert paused == {"job": "morning-report", "paused": True, "operator": name}
        assert aws.store().control("us-east-1/prod").paused["morning-report"].operator == name
        assert judge(invoke_ticker, events["resume"])["paused"] is False
        assert judge(invoke_ticker, events["environment"])["active"] == "DR"
