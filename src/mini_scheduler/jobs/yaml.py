"""YAML, bounded: cron.yaml composed by a loader that counts while it composes, so a file too
large, too deep or an alias bomb is refused before it is built, with the place it went wrong.

Decisions where YAML is lenient:

* A plain scalar that looks like a date (``2026-01-01``) stays text, as written: JSON has no
  date type, and the target receives exactly what the file says.
* A key written twice in one mapping is recorded as a :class:`Duplicate`; the loader decides
  what it costs (the whole file, an entry, or a warning).
* A YAML merge key (``<<: *defaults``) works, so entries can share settings.
* A value its tag cannot read (``!!int nope``) is refused naming the tag, never quoting the
  value, which may be a secret parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import yaml
from yaml.events import AliasEvent, CollectionStartEvent, ScalarEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from mini_scheduler.errors import CronFileError

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_TEXT",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "Duplicate",
    "compose",
    "decode",
    "entry_nodes",
]

MAX_FILE_BYTES: Final = 1024 * 1024
"""A cron file larger than this (1 MiB) is refused before it is parsed."""
MAX_DEPTH: Final = 32
"""Mappings and lists nested deeper than this are refused (aliases count at their full depth)."""
MAX_NODES: Final = 100_000
"""Refused above this many YAML nodes, counting every alias as the whole subtree it repeats."""
MAX_EXPANDED_TEXT: Final = 4 * MAX_FILE_BYTES
"""Refused above this many characters of scalar text, aliases expanded (a large string repeated)."""

_TIMESTAMP_TAG: Final = "tag:yaml.org,2002:timestamp"
_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_YAML_TAG: Final = "tag:yaml.org,2002:"
_STR_TAG: Final = _YAML_TAG + "str"


class _Refused(Exception):
    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        line = getattr(mark, "line", None)
        self.line = line + 1 if isinstance(line, int) else None


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A key written twice in one mapping."""

    mapping: int  # start index of the mapping that holds the key twice
    key: str
    first: int  # lines, from 1
    again: int


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that counts while it composes, so a bomb is refused before it is built.

    Every node counts once, and every alias counts as the whole subtree it repeats (so
    ``&a [*b, *b, ...]`` chains that expand to billions of nodes stop at :data:`MAX_NODES`);
    depth counts mappings and lists (the file's own mapping is level 1), an alias at its full
    depth; an alias inside the node it names (a recursive
    structure, which JSON cannot carry either) is refused. Plain dates stay text.
    """

    yaml_implicit_resolvers = {  # noqa: RUF012 - PyYAML reads it from the class
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._reached = 0
        self._nodes = 0
        self._text = 0
        self._weights: dict[str, tuple[int, int, int]] = {}  # anchor -> nodes, text, height
        self._open: set[str] = set()
        self.duplicates: list[Duplicate] = []

    def _count(self, nodes: int, text: int, mark: Any) -> None:
        self._nodes += nodes
        self._text += text
        if self._nodes > MAX_NODES:
            raise _Refused(
                f"holds more than {MAX_NODES} YAML nodes (each alias counts as what it "
                "repeats): refused as an alias bomb or a file too big to schedule",
                mark,
            )
        if self._text > MAX_EXPANDED_TEXT:
            raise _Refused(
                f"expands to more than {MAX_EXPANDED_TEXT} characters of text (each alias "
                "counts as what it repeats): refused as an alias bomb",
                mark,
            )

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            anchor = event.anchor
            if anchor in self._open:
                raise _Refused(
                    f"alias *{anchor} is inside the node it names (a recursive structure)",
                    event.start_mark,
                )
            weight = self._weights.get(anchor) if anchor is not None else None
            if weight is not None:
                nodes, text, height = weight
                self._count(nodes, text, event.start_mark)
                self._reached = max(self._reached, self._depth + height)
                if self._reached > MAX_DEPTH:
                    raise _Refused(f"nests deeper than {MAX_DEPTH} levels", event.start_mark)
            return super().compose_node(parent, index)
        parent_depth = self._depth
        depth = parent_depth + (1 if isinstance(event, CollectionStartEvent) else 0)
        if depth > MAX_DEPTH:
            raise _Refused(f"nests deeper than {MAX_DEPTH} levels", event.start_mark)
        self._depth = depth
        nodes_before, text_before, reached_before = self._nodes, self._text, self._reached
        self._reached = depth
        value = event.value if isinstance(event, ScalarEvent) else None
        self._count(1, len(value) if isinstance(value, str) else 0, event.start_mark)
        anchor = event.anchor
        if isinstance(anchor, str):
            self._open.add(anchor)
        node = super().compose_node(parent, index)
        if isinstance(anchor, str):
            self._open.discard(anchor)
            height = self._reached - parent_depth  # the levels this node adds below its parent
            self._weights[anchor] = (self._nodes - nodes_before, self._text - text_before, height)
        self._reached = max(reached_before, self._reached)
        self._depth = parent_depth
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """A value its tag cannot read (``!!int nope``) is refused naming the tag and the place,
        not quoting the value, which may be a parameter's (and secret): Python's own text
        (``invalid literal for int() with base 10: 'nope'``) would."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, AttributeError, OverflowError, IndexError, KeyError):
            tag = str(node.tag).replace(_YAML_TAG, "!!")
            raise yaml.constructor.ConstructorError(
                None, None, f"a value cannot be read as {tag[:40]}", node.start_mark
            ) from None

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], int] = {}
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != _MERGE_TAG:
                ident = (key.tag, key.value)
                line = key.start_mark.line + 1
                if ident in seen:
                    self.duplicates.append(
                        Duplicate(node.start_mark.index, key.value, seen[ident], line)
                    )
                else:
                    seen[ident] = line
        return node


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [part for part in (exc.context, exc.problem) if part]
        text = ": ".join(parts) or "unreadable"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            text += f" (line {mark.line + 1}, column {mark.column + 1})"
        if "alias" in text:
            text += "; a value that starts with '*' must be quoted, as in cron: \"* * * * * ?\""
        return text
    return str(exc)


def compose(text: str, source: str) -> tuple[Node | None, Any, list[Duplicate]]:
    """The document's root node, the Python value it builds, and the keys written twice;
    ``(None, None, [])`` for a document of comments only. CronFileError names ``source`` and
    the place when the text is not YAML or goes past a bound."""
    try:
        loader = _BoundedLoader(text)  # the reader refuses control characters here already
    except yaml.YAMLError as exc:
        raise CronFileError(f"Cron file {source} is not valid YAML: {_yaml_message(exc)}") from None
    try:
        try:
            node = loader.get_single_node()
        except _Refused as exc:
            where = "" if exc.line is None else f" (line {exc.line})"
            raise CronFileError(f"Cron file {source} {exc.message}{where}") from None
        except yaml.YAMLError as exc:
            raise CronFileError(
                f"Cron file {source} is not valid YAML: {_yaml_message(exc)}"
            ) from None
        if node is None:
            return None, None, []
        try:
            data = loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise CronFileError(
                f"Cron file {source} is not valid YAML: {_yaml_message(exc)}"
            ) from None
        except (
            ValueError,
            TypeError,
            AttributeError,
            OverflowError,
            IndexError,
            KeyError,
            RecursionError,
        ) as exc:
            # SafeConstructor lets a few of these out for bad explicit tags (!!int x,
            # !!timestamp x); the file is refused either way.
            raise CronFileError(
                f"Cron file {source} is not valid YAML: a value cannot be read "
                f"({type(exc).__name__}: {exc})"
            ) from None
        return node, data, loader.duplicates
    finally:
        loader.dispose()


def decode(raw: bytes, source: str) -> str:
    """``raw`` as UTF-8 text (a byte order mark dropped), or CronFileError."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CronFileError(
            f"Cron file {source} is not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None


def entry_nodes(root: Node) -> list[Node]:
    """The nodes of the ``jobs`` list's entries (to place a duplicate key in its entry)."""
    if isinstance(root, MappingNode):
        for key, value in root.value:
            if (
                isinstance(key, ScalarNode)
                and key.tag == _STR_TAG
                and key.value == "jobs"
                and isinstance(value, SequenceNode)
            ):
                return list(value.value)
    return []
