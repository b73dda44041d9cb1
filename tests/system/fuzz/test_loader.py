"""The cron.yaml loader on bad input, past what tests/unit/jobs/ covers.

tests/unit/jobs/test_file.py already holds the whole-file errors one by one, the classic bombs
(billion laughs, an alias bomb in parameters, a large string repeated, a recursive alias, deep
nesting), the 1 MiB bound, and random YAML-ish text, bytes and documents. Here:

* near misses of the real sample file, samplecode/cron.yaml: its text edited by a character, a
  line or a YAML feature (an anchor, an alias, a tag, a merge key, an indentation), and its
  structure with any value of any type put in any place;
* every key of every sample entry and every file setting, given each wrong type in turn;
* bombs through merge keys (``<<: *a`` and ``<<: [*a, *a, ...]``);
* the largest files the bound lets through, of real content: as many jobs as fit in 1 MiB,
  1 MiB of list items, thousands of anchors and aliases, a key written a hundred thousand times.

Each either loads into a consistent file (``tests.unit.jobs.test_file.check``) or raises
CronFileError naming the source, and within a bound (no hang).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mini_scheduler.errors import CronFileError
from mini_scheduler.jobs import MAX_FILE_BYTES, load
from tests.conftest import ROOT
from tests.unit.jobs.test_file import check  # a consistent file, or CronFileError naming the fault

SAMPLE = (ROOT / "samplecode" / "cron.yaml").read_text(encoding="utf-8")
SAMPLE_DATA: dict[str, Any] = yaml.safe_load(SAMPLE)
DEFAULT = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(DEFAULT, max_examples=1000)


# -- near misses of the sample file, as text ------------------------------------------------

YAML_BITS = (
    "&a ",
    "*a",
    "*a ",
    "<<: *a",
    "!!str ",
    "!!int ",
    "!!binary ",
    "!!timestamp ",
    "!!python/name:os.system ",
    "? ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    "|",
    ">",
    "#",
    ": ",
    "'",
    '"',
    "\t",
    "\\",
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "\x00",
    "\ufeff",
    "null",
    "~",
    "yes",
    "0x1F",
    ".nan",
    "2026-11-30",
)
LINES = SAMPLE.splitlines(keepends=True)


@st.composite
def edited_sample(draw: st.DrawFn) -> str:
    """The sample file with one to three edits of a character, a line or a YAML feature."""
    lines = list(LINES)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        line = lines[at]
        how = draw(
            st.sampled_from(
                ["bit", "bit", "char", "delete", "drop", "double", "swap", "indent", "dedent"]
            )
        )
        column = draw(st.integers(0, max(0, len(line) - 1)))
        if how == "bit":
            lines[at] = line[:column] + draw(st.sampled_from(YAML_BITS)) + line[column:]
        elif how == "char":
            lines[at] = line[:column] + draw(st.characters()) + line[column + 1 :]
        elif how == "delete":
            lines[at] = line[:column] + line[column + 1 :]
        elif how == "drop":
            del lines[at]
        elif how == "double":
            lines.insert(at, line)
        elif how == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif how == "indent":
            lines[at] = "  " + line
        elif line.startswith(" "):
            lines[at] = line[2:] if line.startswith("  ") else line[1:]
        if not lines:
            lines = [""]
    return "".join(lines)


@DEFAULT
@given(edited_sample())
def test_edited_sample_text(text: str) -> None:
    check(text)


@pytest.mark.slow
@SLOW
@given(edited_sample())
def test_edited_sample_text_at_length(text: str) -> None:
    check(text)


# -- near misses of the sample file, as data -------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.binary(max_size=8),
    st.dates(),
    st.datetimes(),
    st.sampled_from(["0 0 9 * * ?", "flow://x", "fn", "UTC", "America/NewYork", "_x", "a..b"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.one_of(st.text(max_size=6), st.integers(), st.booleans()), inner, max_size=3
        )
    ),
    max_leaves=10,
)


def _places(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _places(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _places(item, (*here, index))
    return found


PLACES = _places(SAMPLE_DATA)


@st.composite
def changed_sample(draw: st.DrawFn) -> str:
    """The sample's data with any value of any type put in one to three places (or one added),
    dumped as YAML (Python-specific types and all)."""
    data: Any = copy.deepcopy(SAMPLE_DATA)
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(_places(data)))
        value = draw(VALUES)
        if not place:
            data = value
            continue
        holder = data
        try:
            for step in place[:-1]:
                holder = holder[step]
            if isinstance(holder, dict) and draw(st.booleans()):
                holder[draw(st.text(max_size=8))] = value
            else:
                holder[place[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed that place
    return yaml.dump(data, allow_unicode=True, Dumper=yaml.Dumper)


@DEFAULT
@given(changed_sample())
def test_changed_sample_data(text: str) -> None:
    check(text)


# -- every key, every wrong type -----------------------------------------------------------

WRONG = {
    "null": None,
    "true": True,
    "zero": 0,
    "negative": -1,
    "huge": 10**30,
    "float": 1.5,
    "nan": float("nan"),
    "text": "nonsense",
    "empty text": "",
    "long text": "x" * 5000,
    "list": ["a"],
    "mapping": {"a": 1},
    "date": "!!timestamp 2026-11-30",
    "binary": "!!binary aGVsbG8=",
    "set": "!!set {a, b}",
}
ENTRY_KEYS = sorted({key for job in SAMPLE_DATA["jobs"] for key in job} | {"enabled", "resolver"})
FILE_KEYS = ["deferred.start", "leader.election", "misfire.grace", "misfire.max", "pools", "jobs"]


def _with(key: str, wrong: str, *, entry: bool) -> str:
    data: dict[str, Any] = copy.deepcopy(SAMPLE_DATA)
    value = WRONG[wrong]
    tagged = isinstance(value, str) and value.startswith("!!")
    placeholder = "__WRONG__"
    if entry:
        data["jobs"][0][key] = placeholder if tagged else value
    else:
        data[key] = placeholder if tagged else value
    text = yaml.safe_dump(data, allow_unicode=True)
    return text.replace(f"'{placeholder}'", str(value)).replace(placeholder, str(value))


@pytest.mark.parametrize("wrong", WRONG)
@pytest.mark.parametrize("key", ENTRY_KEYS)
def test_each_entry_key_of_each_wrong_type(key: str, wrong: str) -> None:
    """The entry is skipped with a reason, or loads (a description may be any text; a value the
    key takes, such as a whole number of seconds, loads); the other entries load."""
    text = _with(key, wrong, entry=True)
    check(text)
    cron_file = load(text)
    assert {job.name for job in cron_file.jobs} >= {"hourly-cleanup", "heartbeat"}


@pytest.mark.parametrize("wrong", WRONG)
@pytest.mark.parametrize("key", FILE_KEYS)
def test_each_file_setting_of_each_wrong_type(key: str, wrong: str) -> None:
    check(_with(key, wrong, entry=False))


# -- bombs through merge keys ----------------------------------------------------------------


def refused(text: str, match: str) -> None:
    with pytest.raises(CronFileError, match=match):
        load(text)


def test_a_merge_key_repeating_a_mapping_is_counted_in_full() -> None:
    defaults = "d: &d {" + ", ".join(f"k{i}: {i}" for i in range(100)) + "}\n"
    entries = "".join(
        f"  - {{<<: *d, name: j{i}, cron: '0 0 0 * * ?', service: fn}}\n" for i in range(2000)
    )
    refused(defaults + "jobs:\n" + entries, "holds more than 100000 YAML nodes")


def test_a_merge_list_of_the_same_alias_is_counted_in_full() -> None:
    defaults = "d: &d {" + ", ".join(f"k{i}: {i}" for i in range(1000)) + "}\n"
    merge = "[" + ", ".join(["*d"] * 300) + "]"
    text = defaults + f"jobs:\n  - {{<<: {merge}, name: j, cron: '0 0 0 * * ?', service: fn}}\n"
    refused(text, "holds more than 100000 YAML nodes")


def test_merge_keys_chained_through_anchors() -> None:
    lines = ["m0: &m0 {" + ", ".join(f"k{i}: {i}" for i in range(10)) + "}"]
    lines += [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], x{i}: {i}}}" for i in range(1, 40)]
    lines.append("jobs: [{<<: *m39, name: j, cron: '0 0 0 * * ?', service: fn}]")
    refused("\n".join(lines), "holds more than 100000 YAML nodes")


def test_an_alias_as_a_job_entry_or_a_key() -> None:
    entry = "{name: j, cron: '0 0 0 * * ?', service: fn}"
    cron_file = load(f"e: &e {entry}\njobs: [*e, *e]\n")  # two entries named j: both skipped
    assert cron_file.jobs == () and cron_file.skipped == 2
    check("k: &k name\njobs: [{*k : j, cron: '0 0 0 * * ?', service: fn}]\n")


# -- the largest files the bound lets through ------------------------------------------------


def _as_many_jobs_as_fit() -> str:
    zones = ("UTC", "America/New_York", "Europe/London", "Asia/Tokyo", "Pacific/Apia")
    lines = ["jobs:\n"]
    size = len(lines[0])
    number = 0
    while True:
        line = (
            f'  - {{name: "job-{number}", cron: "{number % 60} {number * 7 % 60} {number % 24} ? '
            f'* {1 + number % 7}", timezone: "{zones[number % 5]}", service: "fn-{number}"}}\n'
        )
        if size + len(line) > MAX_FILE_BYTES:
            return "".join(lines)
        lines.append(line)
        size += len(line)
        number += 1


HUGE: dict[str, Callable[[], str]] = {
    "as many jobs as fit": _as_many_jobs_as_fit,
    "list items": lambda: "jobs: [" + ",".join(["1"] * (MAX_FILE_BYTES // 2 - 10)) + "]",
    "anchors and aliases": lambda: (
        "a: [" + ",".join(f"&a{i} x" for i in range(30_000)) + "]\n"
        "b: [" + ",".join(f"*a{i}" for i in range(30_000)) + "]\njobs: []\n"
    ),
    "one key written again and again": lambda: (
        "jobs: []\n" + "".join(f"x{i % 2}: {i}\n" for i in range(90_000))
    ),
    "a statement of 1 MiB": lambda: (
        "jobs: [{name: a, service: fn, cron: '" + "1," * (MAX_FILE_BYTES // 2 - 100) + "'}]"
    ),
    "a key of 1 MiB": lambda: "jobs: []\n" + "k" * (MAX_FILE_BYTES - 100) + ": 1\n",
}


@pytest.mark.parametrize("name", HUGE)
def test_the_largest_files_load_or_are_refused_in_time(name: str) -> None:
    text = HUGE[name]()
    assert len(text.encode()) <= MAX_FILE_BYTES
    check(text)
