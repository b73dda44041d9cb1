"""Whole-file errors: each raises CronFileError naming the source, and nothing is half-loaded.
Bombs (aliases, nesting, size) are refused early: before the parser reads on or builds anything
big; random input never raises anything else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from yaml.nodes import Node

from mini_scheduler.errors import CronFileError, SchedulerError
from mini_scheduler.jobs import MAX_FILE_BYTES, CronFile, load
from mini_scheduler.jobs import yaml as bounded_yaml
from tests.unit.jobs.helpers import BASE, document


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "Cron file cron.yaml is empty: it needs a jobs list", id="empty"),
        pytest.param(" \n\t\n", "Cron file cron.yaml is empty: it needs a jobs list", id="blank"),
        pytest.param(
            "# only a comment\n", "Cron file cron.yaml is empty: it needs a jobs list", id="comment"
        ),
        pytest.param(
            "- a\n- b\n",
            "Cron file cron.yaml must be a mapping with a jobs list, not a list",
            id="list",
        ),
        pytest.param(
            "just text\n",
            "Cron file cron.yaml must be a mapping with a jobs list, not 'just text'",
            id="scalar",
        ),
        pytest.param(
            "deferred.start: true\n",
            "Cron file cron.yaml has no jobs key: list the jobs under jobs:",
            id="no-jobs",
        ),
        pytest.param(
            "jobs:\n",
            "Cron file cron.yaml: jobs must be a list of job entries, not null (write "
            "jobs: [] for none)",
            id="jobs-null",
        ),
        pytest.param(
            "jobs: {name: a}\n",
            "Cron file cron.yaml: jobs must be a list of job entries, not a mapping",
            id="jobs-mapping",
        ),
        pytest.param(
            "jobs: []\njobs: []\n",
            "Cron file cron.yaml: key jobs appears twice (lines 1 and 2)",
            id="jobs-twice",
        ),
        pytest.param(
            "jobs: [\n",
            "Cron file cron.yaml is not valid YAML: while parsing a flow node: expected "
            "the node content, but found '<stream end>' (line 2, column 1)",
            id="not-yaml",
        ),
        pytest.param(
            "jobs:\n  - name: a\n    cron: * * * * * ?\n",
            "Cron file cron.yaml is not valid YAML: while scanning an alias: expected "
            "alphabetic or numeric character, but found ' ' (line 3, column 12); a value "
            "that starts with '*' must be quoted, as in cron: \"* * * * * ?\"",
            id="unquoted-star",
        ),
        pytest.param(
            "jobs: []\n---\njobs: []\n",
            "Cron file cron.yaml is not valid YAML: expected a single document in the "
            "stream: but found another document (line 2, column 1)",
            id="two-documents",
        ),
        pytest.param(
            "jobs: !!python/object/apply:os.system [echo]\n",
            "Cron file cron.yaml is not valid YAML: could not determine a constructor "
            "for the tag 'tag:yaml.org,2002:python/object/apply:os.system' (line 1, "
            "column 7)",
            id="python-tag",
        ),
        pytest.param(
            "jobs: !!int nope\n",
            "Cron file cron.yaml is not valid YAML: a value cannot be read as !!int (line 1, "
            "column 7)",
            id="bad-int-tag",
        ),
        pytest.param(
            "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, parameters: "
            "{pin: !!float s3cret}}\n",
            "Cron file cron.yaml is not valid YAML: a value cannot be read as !!float (line 2, "
            "column 67)",
            id="bad-float-tag-names-no-value",
        ),
        pytest.param(
            "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, parameters: "
            "{pin: !!bool s3cret}}\n",
            "Cron file cron.yaml is not valid YAML: a value cannot be read as !!bool (line 2, "
            "column 67)",
            id="bad-bool-tag-names-no-value",
        ),
        pytest.param(
            "jobs: *nowhere\n",
            "Cron file cron.yaml is not valid YAML: found undefined alias 'nowhere' "
            "(line 1, column 7); a value that starts with '*' must be quoted, as in "
            'cron: "* * * * * ?"',
            id="undefined-alias",
        ),
        pytest.param(
            "jobs: []\ndeferred.start: sometimes\n",
            "Cron file cron.yaml: deferred.start must be true or false, not 'sometimes'",
            id="deferred-start",
        ),
        pytest.param(
            "jobs: []\nleader.election: 1\n",
            "Cron file cron.yaml: leader.election must be true or false, not 1",
            id="leader-election",
        ),
        pytest.param(
            "jobs: []\nmisfire.grace: -1\n",
            "Cron file cron.yaml: misfire.grace must be a whole number of seconds from "
            "0 to 604800, not -1",
            id="grace-negative",
        ),
        pytest.param(
            "jobs: []\nmisfire.grace: 1h\n",
            "Cron file cron.yaml: misfire.grace must be a whole number of seconds from "
            "0 to 604800, not '1h'",
            id="grace-text",
        ),
        pytest.param(
            "jobs: []\nmisfire.max: 0\n",
            "Cron file cron.yaml: misfire.max must be a whole number from 1 to 10000, not 0",
            id="max-zero",
        ),
        pytest.param(
            "jobs: []\nmisfire.max: true\n",
            "Cron file cron.yaml: misfire.max must be a whole number from 1 to 10000, not true",
            id="max-bool",
        ),
    ],
)
def test_whole_file_errors(text: str, message: str) -> None:
    with pytest.raises(CronFileError) as raised:
        load(text, source="cron.yaml")
    assert str(raised.value) == message


def test_whole_file_error_with_valid_entries_returns_nothing() -> None:
    text = document(BASE, {**BASE, "name": "b"}, **{"misfire.max": -5})
    with pytest.raises(CronFileError, match=r"misfire\.max"):
        load(text)


def test_not_utf8() -> None:
    with pytest.raises(CronFileError) as raised:
        load(b"jobs: []\n# caf\xe9\n", source="s3://b/cron.yaml")
    assert str(raised.value) == (
        "Cron file s3://b/cron.yaml is not UTF-8 text (byte 14: invalid continuation byte)"
    )


def test_utf8_bom_is_accepted() -> None:
    assert load(b"\xef\xbb\xbf" + document(BASE).encode()).jobs[0].name == "report"


def test_control_characters_are_refused() -> None:
    with pytest.raises(CronFileError, match="not valid YAML"):
        load("jobs: []\n\x00\n")


def test_unknown_default_timezone() -> None:
    with pytest.raises(CronFileError) as raised:
        load(document(BASE), default_timezone="Mars/Base")
    assert str(raised.value) == (
        "Cron file <string> cannot be read in the default time zone 'Mars/Base': it is unknown "
        "(DEFAULT_TIMEZONE)"
    )
    with pytest.raises(CronFileError) as raised:
        load(document(BASE), default_timezone="Europe/Pariss")
    assert str(raised.value) == (
        "Cron file <string> cannot be read in the default time zone 'Europe/Pariss': it is "
        "unknown (DEFAULT_TIMEZONE) - did you mean Europe/Paris?"
    )


def test_cron_file_error_is_a_scheduler_error() -> None:
    assert issubclass(CronFileError, SchedulerError)


# -- bombs ------------------------------------------------------------------------------------


@dataclass
class Parse:
    """What the YAML loader did for one load: whether it was made at all, how many nodes it
    composed (an alias counts once, whatever it repeats), how many characters of the text its
    reader had consumed when it stopped, and whether it built Python objects from the nodes."""

    made: bool = False
    composed: int = 0
    read: int = 0
    built: bool = False


@pytest.fixture
def parse(monkeypatch: pytest.MonkeyPatch) -> Iterator[Parse]:
    """The loader of :func:`load`, watched."""
    seen = Parse()

    class Watched(bounded_yaml._BoundedLoader):
        def __init__(self, stream: str) -> None:
            seen.made = True
            super().__init__(stream)

        def compose_node(self, parent: Node | None, index: int) -> Node | None:
            seen.composed += 1
            return super().compose_node(parent, index)

        def construct_document(self, node: Node) -> Any:
            seen.built = True
            return super().construct_document(node)

        def dispose(self) -> None:
            seen.read = self.index  # the reader's position: characters consumed so far
            super().dispose()

    monkeypatch.setattr(bounded_yaml, "_BoundedLoader", Watched)
    yield seen


def refused_early(parse: Parse, text: str | bytes, match: str, *, composed: int = 1000) -> None:
    """``load(text)`` raises CronFileError matching ``match`` while composing: after at most
    ``composed`` nodes, and before a single object is built from them."""
    with pytest.raises(CronFileError, match=match):
        load(text)
    assert parse.made and not parse.built
    assert 0 < parse.composed <= composed, parse


def test_billion_laughs(parse: Parse) -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    lines.append("jobs: [*a9]")
    text = "\n".join(lines)
    # a billion nodes if expanded: refused at line 5, after the ~50 nodes written out before it
    refused_early(parse, text, r"holds more than 100000 YAML nodes .*\(line 5\)", composed=100)
    assert parse.read < len(text) // 2


def test_alias_bomb_in_parameters(parse: Parse) -> None:
    text = (
        "p0: &p0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8}\n"
        + "".join(
            f"p{i}: &p{i} {{{', '.join(f'k{j}: *p{i - 1}' for j in range(8))}}}\n"
            for i in range(1, 8)
        )
        + "jobs: [{name: a, cron: '0 0 9 * * ?', service: fn, parameters: *p7}]\n"
    )
    refused_early(parse, text, "holds more than 100000 YAML nodes", composed=150)


def test_large_string_repeated_by_aliases(parse: Parse) -> None:
    text = f"big: &big {'x' * 500_000}\njobs: [{', '.join(['*big'] * 20)}]\n"
    refused_early(parse, text, "expands to more than 4194304 characters of text", composed=20)


@pytest.mark.parametrize("text", ["a: &a [1, *a]\njobs: []\n", "a: &a {b: *a}\njobs: []\n"])
def test_recursive_alias(parse: Parse, text: str) -> None:
    refused_early(
        parse,
        text,
        r"alias \*a is inside the node it names \(a recursive structure\)",
        composed=5,
    )


@pytest.mark.parametrize(
    "text",
    [
        "jobs: " + "[" * 100_000,
        "jobs: " + "{a: " * 100_000,
        "- " * 100_000 + "x",
        "jobs:\n" + "".join(" " * i + "- \n" for i in range(0, 2000, 2)),
    ],
)
def test_deep_nesting(parse: Parse, text: str) -> None:
    """Refused at the 33rd level, with the rest of the text never read."""
    refused_early(parse, text, "nests deeper than 32 levels", composed=100)
    assert parse.read < 2000 < len(text), parse


def test_nesting_through_aliases_counts_in_full(parse: Parse) -> None:
    deep = "[" * 20 + "1" + "]" * 20
    refused_early(
        parse,
        f"a: &a {deep}\njobs: [{{name: x, parameters: {{p: {'[' * 15}*a{']' * 15}}}}}]",
        "nests deeper than 32 levels",
        composed=60,
    )


def test_thirty_two_levels_are_fine() -> None:
    # the file's mapping, jobs, the entry and its parameters are 4 levels: 28 more make 32
    parameters = "[" * 28 + "1" + "]" * 28
    cron_file = load(
        f"jobs: [{{name: a, cron: '0 0 9 * * ?', service: fn, parameters: {{p: {parameters}}}}}]"
    )
    assert cron_file.ok


@pytest.mark.parametrize("encoded", [False, True], ids=["text", "bytes"])
def test_file_too_large_is_refused_before_parsing(parse: Parse, encoded: bool) -> None:
    text = "jobs: []\n#" + "x" * MAX_FILE_BYTES
    message = rf"is {len(text)} bytes, more than the 1048576 allowed"
    with pytest.raises(CronFileError, match=message):
        load(text.encode() if encoded else text)
    assert parse == Parse(), "no YAML loader may be made for a file over the limit"


def test_a_file_just_under_the_limit_loads() -> None:
    text = "jobs: []\n#" + "x" * (MAX_FILE_BYTES - 20) + "\n"
    assert load(text).jobs == ()


def test_many_ordinary_jobs_load() -> None:
    entries = [{**BASE, "name": f"job-{i}", "cron": f"0 {i % 60} * * * ?"} for i in range(500)]
    cron_file = load(document(*entries))
    assert len(cron_file.jobs) == 500 and cron_file.ok


# -- property: nothing but CronFileError, or a consistent file ----------------------------------


def check(text: str | bytes) -> None:
    try:
        cron_file = load(text)
    except CronFileError:
        return
    assert isinstance(cron_file, CronFile)
    assert len(cron_file.jobs) + cron_file.skipped == cron_file.entries
    assert cron_file.ok == (cron_file.skipped == 0)
    for problem in cron_file.problems:
        assert problem.entry is None or 1 <= problem.entry <= cron_file.entries
    names = [job.name for job in cron_file.jobs]
    assert len(names) == len(set(names))
    for job in cron_file.jobs:
        json.dumps(dict(job.parameters), allow_nan=False)
        assert not any(key.startswith("_") for key in job.parameters)


YAMLISH = st.text(
    alphabet=st.sampled_from(
        list(
            "jobs:name cron service timezone parameters - [ ] { } , & * ! "
            "? | > ' \" # % @ ` \n\t 0 9 * ? / L W #  . _ ~ < = \\ \x00 é"
            " !!int !!str !!binary !!timestamp <<"
        )
    ),
    max_size=300,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(YAMLISH)
def test_yamlish_text_loads_or_raises_cron_file_error(text: str) -> None:
    check(text)
    check("jobs:\n  - " + text)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_load_or_raise_cron_file_error(raw: bytes) -> None:
    check(raw)
    check(b"jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, parameters: " + raw + b"}\n")


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=12),
    st.sampled_from(
        [
            "0 0 9 * * ?",
            "0/15 * * * * ?",
            "fn",
            "flow://f",
            "UTC",
            "America/New_York",
            "America/NewYork",
            "EST",
            "fire_all",
            "skip",
            "allow",
            "_x",
            "a..b",
            "morning.report",
        ]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4)
    ),
    max_leaves=8,
)
KEYS = st.sampled_from(
    [
        "name",
        "cron",
        "service",
        "timezone",
        "parameters",
        "description",
        "resolver",
        "misfire",
        "overlap",
        "timeout",
        "enabled",
        "timezon",
    ]
)
ENTRIES = st.one_of(VALUES, st.dictionaries(KEYS, VALUES, max_size=8))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(ENTRIES, max_size=6),
    st.dictionaries(
        st.sampled_from(["deferred.start", "leader.election", "misfire.grace", "misfire.max", "x"]),
        SCALARS,
        max_size=3,
    ),
)
def test_random_documents_load_or_raise_cron_file_error(
    entries: list[Any], settings_: dict[str, Any]
) -> None:
    import yaml

    text = yaml.safe_dump({"jobs": entries, **settings_}, allow_unicode=True)
    check(text)
