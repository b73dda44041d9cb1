"""The closest of the known words to a mistyped one ("did you mean `history`?"), as git and the
AWS CLI say it, and the argument parser that says it for commands and options.

:func:`suggest` is pure and takes any words: commands, options, environment names. difflib is
imported on first use only (the CLI's start, and anything that imports this, stays as fast).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from typing import Any, Final, NoReturn

CUTOFF: Final = 0.6
"""How alike two words must be (difflib's ratio, 0 to 1) for one to be suggested."""


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word``, or None when none is close (or ``word`` is one)."""
    import difflib

    known = [str(choice) for choice in choices]
    if word in known:
        return None
    found = difflib.get_close_matches(word, known, n=1, cutoff=CUTOFF)
    if not found:  # case alone: `Prod` for `prod`
        found = [choice for choice in known if choice.lower() == word.lower()][:1]
    return found[0] if found else None


def suggest(word: str, choices: Iterable[str]) -> str:
    """`` - did you mean `<closest>`?`` to append to a refusal, or "" when nothing is close."""
    found = closest(word, choices)
    return "" if found is None else f" - did you mean `{found}`?"


def _unknown_options(extras: Sequence[str], options: Iterable[str]) -> str:
    """argparse's refusal of ``extras``, each unknown option followed by its closest known one:
    ``unrecognized arguments: --regoin (did you mean `--region`?)``."""
    known = [option for option in options if option.startswith("--")]
    words = []
    for extra in extras:
        found = closest(extra.split("=", 1)[0], known) if extra.startswith("--") else None
        words.append(extra if found is None else f"{extra} (did you mean `{found}`?)")
    return f"unrecognized arguments: {' '.join(words)}"


class SuggestingParser(argparse.ArgumentParser):
    """An ArgumentParser whose refusal of an unknown command, action or option names the
    closest known one. Its subparsers are of the same class (argparse makes them so).
    ``usage_code``: the exit code of a usage error (2; a command whose 2 means something else
    sets its own, as ``plan`` does)."""

    usage_code: int = 2

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            hint = suggest(str(value), [str(choice) for choice in action.choices or ()])
            if not hint:
                raise
            raise argparse.ArgumentError(action, f"{exc.message}{hint}") from None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:  # a command's own parser: none below takes them
            self.error(_unknown_options(extras, self._option_string_actions))
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(self.usage_code, f"{self.prog}: error: {message}\n")
