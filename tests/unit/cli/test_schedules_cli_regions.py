"""An operator's write through the CLI says which peer regions it is in step with after the
answer, and which not (mini_scheduler.carry)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from mini_scheduler.cli.context import Context
from mini_scheduler.cli.deferred import say_regions
from mini_scheduler.clock import FixedClock


def _context() -> tuple[Context, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    clock = FixedClock(datetime(2026, 11, 30, 14, 0, tzinfo=UTC))
    return Context(clock=clock, out=out, err=err, environ={}), out, err


def test_the_regions_in_step_and_those_not_are_said() -> None:
    context, out, err = _context()
    answer = {"regions": {"inStep": ["us-west-2"], "notInStep": {"eu-west-1": "timed out"}}}
    say_regions(context, answer)
    assert out.getvalue() == "In step: us-west-2.\n"
    assert "eu-west-1 not in step yet (timed out)" in err.getvalue()


def test_an_answer_without_peers_says_nothing_of_regions() -> None:
    context, out, err = _context()
    say_regions(context, {"created": []})
    assert out.getvalue() == "" and err.getvalue() == ""
