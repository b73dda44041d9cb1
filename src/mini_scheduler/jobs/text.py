"""How a message about cron.yaml shows what the file holds: short, on one line, and a
parameter's value never (it may be a secret)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["describe", "kind", "printable", "quoted", "words"]


def describe(value: object) -> str:
    """``value`` as a reason shows a setting that is wrong: ``null``, ``true``, ``'text'``, a
    number, ``a mapping``, ``a list``, or its type and the start of its repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return repr(value)
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}"


def kind(value: object) -> str:
    """What ``value`` is, without what it holds: for parameters, whose values may be secret."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None or isinstance(value, dict | list):
        return describe(value)
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def words(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def quoted(text: str, limit: int) -> str:
    """``text`` quoted, cut to ``limit`` characters (``'abc'...``)."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}..."


def printable(path: str, limit: int = 200) -> str:
    """A key or a parameter's path as a message shows it: keys may be long, and hold line
    breaks or other control characters, the message is one short line."""
    cut = path if len(path) <= limit else path[:limit] + "..."
    return (
        cut if cut.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in cut)
    )
