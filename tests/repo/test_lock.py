"""The lock (requirements/dev.lock, installed by `make install` and so by `make test`) agrees with
pyproject.toml: every dependency pyproject names, runtime and extras, is pinned there at a
version its range allows, hashed; and every pin the lock says pyproject asked for, pyproject
still asks for. A change to one without `make lock` fails here, not on a machine next month."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import ROOT

LOCK = ROOT / "requirements" / "dev.lock"
FROM_PYPROJECT = "mini-scheduler (pyproject.toml)"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashed: bool
    via: frozenset[str]  # what asked for it, as the lock's "# via" comments say


def pins(text: str) -> dict[str, Pin]:
    """The lock's pins by canonical name, with whether each carries a hash and its "via"."""
    found: dict[str, Pin] = {}
    for entry in re.split(r"\n(?=\S)", text):
        match = PIN.match(entry)
        if match is None:
            continue
        _, _, via = entry.partition("# via")
        found[canonicalize_name(match["name"])] = Pin(
            Version(match["version"]),
            "--hash=sha256:" in entry,
            frozenset(
                filter(None, (line.strip().lstrip("#").strip() for line in via.splitlines()))
            ),
        )
    return found


def requirements(pyproject: dict[str, object]) -> list[Requirement]:
    """Every dependency ``pyproject`` names: the runtime ones and each extra's."""
    project = pyproject["project"]
    assert isinstance(project, dict)
    extras = project.get("optional-dependencies", {})
    return [Requirement(text) for text in project["dependencies"]] + [
        Requirement(text) for group in extras.values() for text in group
    ]


def disagreements(pyproject: dict[str, object], lock: str) -> list[str]:
    """Where ``pyproject`` and the lock's text disagree, said for a person who runs make lock."""
    pinned = pins(lock)
    wanted = requirements(pyproject)
    found = []
    for requirement in wanted:
        pin = pinned.get(canonicalize_name(requirement.name))
        if pin is None:
            found.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            found.append(f"{requirement} but the lock pins {requirement.name}=={pin.version}")
    named = {canonicalize_name(r.name) for r in wanted}
    found += [
        f"the lock pins {name} for pyproject.toml, which no longer names it"
        for name, pin in sorted(pinned.items())
        if FROM_PYPROJECT in pin.via and name not in named
    ]
    found += [f"{name} has no hash in the lock" for name, pin in pinned.items() if not pin.hashed]
    return found


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_lock_pins_every_dependency_of_pyproject_within_its_range() -> None:
    assert disagreements(_pyproject(), LOCK.read_text()) == [], "run `make lock`"


def test_the_lock_holds_the_whole_environment() -> None:
    pinned = pins(LOCK.read_text())
    assert len(pinned) > 50  # the dependencies of the dependencies too, not only pyproject's
    assert all(pin.via for pin in pinned.values())


def _with(extra: str) -> dict[str, object]:
    pyproject = _pyproject()
    project = pyproject["project"]
    assert isinstance(project, dict)
    project["optional-dependencies"]["dev"].append(extra)
    return pyproject


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda: _with("left-pad-unknown>=1"), "left-pad-unknown>=1 is not in the lock"),
        (lambda: _with("pytest>=99"), "pytest>=99 but the lock pins pytest=="),
    ],
    ids=["a-dependency-not-locked", "a-pin-outside-the-range"],
)
def test_a_pyproject_the_lock_does_not_match_is_told(change: object, said: str) -> None:
    assert callable(change)
    found = disagreements(change(), LOCK.read_text())
    assert len(found) == 1 and found[0].startswith(said), found


def test_a_dependency_pyproject_dropped_is_told() -> None:
    pyproject = _pyproject()
    project = pyproject["project"]
    assert isinstance(project, dict)
    dev = project["optional-dependencies"]["dev"]
    project["optional-dependencies"]["dev"] = [d for d in dev if not d.startswith("croniter")]
    assert disagreements(pyproject, LOCK.read_text()) == [
        "the lock pins croniter for pyproject.toml, which no longer names it"
    ]


def test_a_pin_without_a_hash_is_told() -> None:
    text = LOCK.read_text()
    unhashed = re.sub(r"(?m)^(croniter==\S+) \\\n(    --hash=\S+(?: \\)?\n)+", r"\1\n", text)
    assert unhashed != text
    assert disagreements(_pyproject(), unhashed) == ["croniter has no hash in the lock"]
