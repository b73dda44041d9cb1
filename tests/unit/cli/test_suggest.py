"""A mistyped command, action, option or name gets the closest known one (issue 25, item 13)."""

from __future__ import annotations

import pytest

from mini_scheduler.cli.main import main
from mini_scheduler.cli.suggest import suggest

COMMANDS = ("validate", "next", "jobs", "history", "run", "rerun", "status", "failover")


@pytest.mark.parametrize(
    ("word", "choices", "said"),
    [
        ("histroy", COMMANDS, " - did you mean `history`?"),
        ("staus", COMMANDS, " - did you mean `status`?"),
        ("--regoin", ("--region", "--stack", "--json"), " - did you mean `--region`?"),
        ("Prod", ("prod", "DR"), " - did you mean `prod`?"),  # case alone
        ("dr", ("prod", "DR"), " - did you mean `DR`?"),
        ("zzzz", COMMANDS, ""),  # nothing close: nothing said
        ("history", COMMANDS, ""),  # a known word needs no suggestion
        ("anything", (), ""),
    ],
    ids=["command", "dropped-letter", "option", "case", "short-case", "far", "known", "none"],
)
def test_suggest(word: str, choices: tuple[str, ...], said: str) -> None:
    assert suggest(word, choices) == said


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["histroy"], "invalid choice: 'histroy' (choose from "),
        (["histroy"], "- did you mean `history`?"),
        (["schedule", "lsit"], "invalid choice: 'lsit' (choose from 'create', 'list', 'show', "),
        (["schedule", "lsit"], "- did you mean `list`?"),
        (
            ["validate", "--strcit", "--jsn", "x.yaml"],
            "mini-scheduler validate: error: unrecognized arguments: --strcit (did you mean "
            "`--strict`?) --jsn (did you mean `--json`?)",
        ),
        (
            ["history", "--regoin=us-east-1"],
            "unrecognized arguments: --regoin=us-east-1 (did you mean `--region`?)",
        ),
        (["history", "--qqqq"], "mini-scheduler history: error: unrecognized arguments: --qqqq\n"),
    ],
    ids=["command", "command-hint", "action", "action-hint", "options", "option=value", "far"],
)
def test_a_mistyped_command_or_option_names_the_closest(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    assert main(argv, environ={}) == 2
    assert said in capsys.readouterr().err
