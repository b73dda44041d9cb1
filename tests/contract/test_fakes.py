"""Every fake of a seam in the tests offers its whole protocol, in the protocol's shape.

A fake is found, not listed: a top-level class under ``tests/`` (the browser tests aside) that
defines a seam's methods (two of the claim store's; ``get`` and ``set``; ``dispatch``) or
derives from a store. Each member of the protocol, read from the Protocol class (a member
added there is asked of every fake at once), must be one the fake defines, inherits from a
real backend, or passes on to a wrapped store (``__getattr__``; the contract suite runs
:class:`.claims.recording.Recording` over the memory store); a method it defines itself must
take every argument the protocol's does. The check is tried on fakes made partial on purpose."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.dispatch.base import Dispatcher
from mini_scheduler.environment.base import EnvironmentStore
from tests.conftest import ROOT
from tests.contract.seams import SEAMS, protocol_attributes, protocol_methods

SKIPPED_FOLDERS = ("browser",)


@dataclass(frozen=True)
class Found:
    module: str
    name: str
    methods: frozenset[str]
    bases: tuple[str, ...]
    assigned: frozenset[str]  # self.<name> = ... anywhere in its body

    @property
    def where(self) -> str:
        return f"{self.module}.{self.name}"


def _found(module: str, node: ast.ClassDef) -> Found:
    methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    assigned = {
        target.attr
        for n in ast.walk(node)
        for target in (
            n.targets
            if isinstance(n, ast.Assign)
            else [n.target]
            if isinstance(n, ast.AnnAssign)
            else []
        )
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    }
    assigned |= {
        n.target.id
        for n in node.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    bases = tuple(ast.unparse(base) for base in node.bases)
    return Found(module, node.name, frozenset(methods), bases, frozenset(assigned))


def classes_under_tests() -> Iterator[Found]:
    tests = ROOT / "tests"
    for path in sorted(tests.rglob("*.py")):
        if path.relative_to(tests).parts[0] in SKIPPED_FOLDERS:
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if module == __name__:
            continue  # the partial fakes below are partial on purpose
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                yield _found(module, node)


def seam_of(found: Found) -> type | None:
    """The seam ``found`` fakes, or None for a class that fakes none."""

    def derives(suffix: str) -> bool:
        return any(base.endswith(suffix) for base in found.bases)

    if derives("ClaimStore") or len(found.methods & protocol_methods(ClaimStore)) >= 2:
        return ClaimStore
    if derives("EnvironmentStore") or {"get", "set"} <= found.methods:
        return EnvironmentStore
    if derives("Dispatcher") or "dispatch" in found.methods:
        return Dispatcher
    return None


FAKES = sorted(
    ((found, seam) for found in classes_under_tests() if (seam := seam_of(found)) is not None),
    key=lambda pair: pair[0].where,
)


# -- what a fake must offer --------------------------------------------------------------------


def _real(owner: type) -> bool:
    """A class of the code under test: the contract suite holds it to the contract."""
    return owner.__module__.startswith("mini_scheduler.")


def _owner(fake: type, name: str) -> type | None:
    return next((klass for klass in fake.__mro__ if name in vars(klass)), None)


def takes_what_the_protocol_passes(protocol: Callable[..., Any], fake: Callable[..., Any]) -> str:
    """Why a caller of ``protocol``'s method cannot call ``fake`` so, or "" when it can."""
    wanted = list(inspect.signature(protocol).parameters.values())[1:]
    given = list(inspect.signature(fake).parameters.values())[1:]
    by_name = {p.name: p for p in given}
    var_positional = any(p.kind is p.VAR_POSITIONAL for p in given)
    var_keyword = any(p.kind is p.VAR_KEYWORD for p in given)
    positional = [p for p in given if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for index, p in enumerate(w for w in wanted if w.kind is w.POSITIONAL_OR_KEYWORD):
        if index < len(positional) and positional[index].name != p.name:
            return f"takes {positional[index].name!r} where the protocol passes {p.name!r}"
        if index >= len(positional) and not (var_positional or var_keyword):
            return f"does not take {p.name!r}"
    for p in wanted:
        q = by_name.get(p.name)
        if q is None:
            if not (var_keyword or (p.kind is p.POSITIONAL_OR_KEYWORD and var_positional)):
                return f"does not take {p.name!r}"
        elif p.default is not p.empty and q.default is q.empty:
            return f"needs {p.name!r}, which the protocol's callers may leave out"
    extra = [
        q.name
        for q in given
        if q.name not in {p.name for p in wanted}
        and q.default is q.empty
        and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)
    ]
    return f"needs {extra[0]!r}, which the protocol does not pass" if extra else ""


def problems(fake: type, protocol: type, assigned: frozenset[str] = frozenset()) -> list[str]:
    """What ``fake`` lacks of ``protocol``, or how one of its own methods differs from it."""
    delegates = _owner(fake, "__getattr__") not in (None, object)
    found = []
    for name in sorted(protocol_methods(protocol)):
        owner = _owner(fake, name)
        if owner is None:
            if not delegates:
                found.append(f"{name}: missing")
        elif not _real(owner):
            why = takes_what_the_protocol_passes(getattr(protocol, name), getattr(fake, name))
            if why:
                found.append(f"{name}: {why}")
    for name in sorted(protocol_attributes(protocol)):
        known = name in assigned or any(
            name in vars(k) or name in getattr(k, "__annotations__", {}) or _real(k)
            for k in fake.__mro__
        )  # a real backend sets its own (in __init__): the contract suite holds it
        if not (known or delegates):
            found.append(f"{name}: missing")
    return found


@pytest.mark.parametrize(
    ("found", "seam"), FAKES, ids=[f"{found.where}-{seam.__name__}" for found, seam in FAKES]
)
def test_each_fake_offers_its_whole_protocol(found: Found, seam: type) -> None:
    fake = getattr(importlib.import_module(found.module), found.name)
    assert problems(fake, seam, found.assigned) == []


def test_the_fakes_found_include_those_the_tests_lean_on() -> None:
    """The search finds fakes: the recording claim store, the simulation's, the rig's."""
    where = {found.where: seam for found, seam in FAKES}
    assert where["tests.contract.claims.recording.Recording"] is ClaimStore
    assert where["tests.system.simulation.test_day.SimClaims"] is ClaimStore
    assert where["tests.system.simulation.test_day.SimEnvironmentStore"] is EnvironmentStore
    assert where["tests.unit.tick.harness.FakeDispatcher"] is Dispatcher
    assert {seam for _, seam in FAKES} == set(SEAMS)


# -- the check, tried on fakes partial on purpose ----------------------------------------------


class _NoDrop:
    """Every claim store method but ``drop_deferred`` (built below)."""


for _name in protocol_methods(ClaimStore) - {"drop_deferred"}:
    setattr(_NoDrop, _name, getattr(ClaimStore, _name))
_NoDrop.name = "no-drop"  # type: ignore[attr-defined]


class _OldClaim(_NoDrop):
    def claim(self, firing: Any, *, now: Any, lease_until: Any, origin: Any) -> Any: ...

    def drop_deferred(self, deferred: Any, batch: int) -> None: ...


class _Nameless:
    persistent = True

    def get(self) -> str | None: ...

    def set(self, value: str, *, operator: str) -> None: ...


def test_the_check_names_what_a_fake_lacks_or_takes_otherwise() -> None:
    assert problems(_NoDrop, ClaimStore) == ["drop_deferred: missing"]
    assert problems(_OldClaim, ClaimStore) == [
        "claim: does not take 'exclusive'",
        "drop_deferred: needs 'batch', which the protocol does not pass",
    ]
    assert problems(_Nameless, EnvironmentStore) == ["set: does not take 'now'", "name: missing"]
    assert problems(_Nameless, EnvironmentStore, frozenset({"name"})) == [
        "set: does not take 'now'"
    ]


def test_a_fake_that_passes_members_on_offers_them() -> None:
    class Wrapper:
        def __getattr__(self, name: str) -> Any: ...

    assert problems(Wrapper, ClaimStore) == []
