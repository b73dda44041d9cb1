"""The package's import graph, read from the source with ``ast``: no cycle at all, only the entry
points build the scheduler (``wiring``), and the Lambda handlers never reach the local run or the
CLI (which the function build leaves out of the package).

Every import counts: at module level, inside a function (a lazy import), and under
``TYPE_CHECKING``. A cycle, even a lazy one, means two modules that cannot be read apart.
"""

from __future__ import annotations

import ast
import itertools
import os
import subprocess  # nosec B404 # a fresh interpreter imports the handler
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = "mini_scheduler"


@dataclass(frozen=True, slots=True)
class Edge:
    target: str
    line: int


Graph = dict[str, dict[str, Edge]]


def _module(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _known(name: str, modules: Collection[str]) -> str | None:
    """The module ``name`` loads: itself, or its longest prefix that is one of ``modules``."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.AST, module: str, is_package: bool, modules: Collection[str]) -> set[str]:
    """The package's modules an import statement loads (``from a import b``: ``a.b`` when it is
    a module, else ``a``)."""
    if isinstance(node, ast.Import):
        found = {_known(alias.name, modules) for alias in node.names}
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            here = module.split(".") if is_package else module.split(".")[:-1]
            here = here[: len(here) - (node.level - 1)]
            base = ".".join([*here, *([base] if base else [])])
        found = {
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else _known(base, modules)
            for alias in node.names
        }
    else:
        return set()
    return {name for name in found if name is not None and name != module}


def import_graph(src: Path = SRC, package: str = PACKAGE) -> Graph:
    """``module -> {imported module: the first line importing it}``, for the package's modules."""
    paths = {_module(path, src): path for path in sorted((src / package).rglob("*.py"))}
    graph: Graph = {}
    for module, path in paths.items():
        edges: dict[str, Edge] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for target in _targets(node, module, path.name == "__init__.py", paths):
                line = getattr(node, "lineno", 0)
                if target not in edges or line < edges[target].line:
                    edges[target] = Edge(target, line)
        graph[module] = edges
    return graph


def find_cycle(graph: Graph) -> list[str] | None:
    """One cycle of ``graph`` (its modules in order, the first repeated last), or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        path.append(start)
        on_path.add(start)
        while stack:
            node, successors = stack[-1]
            successor = next(successors, None)
            if successor is None:
                stack.pop()
                path.pop()
                on_path.discard(node)
                done.add(node)
            elif successor in on_path:
                return [*path[path.index(successor) :], successor]
            elif successor not in done and successor in graph:
                stack.append((successor, iter(sorted(graph[successor]))))
                path.append(successor)
                on_path.add(successor)
    return None


def describe(cycle: list[str], graph: Graph) -> str:
    return "\n".join(
        f"  {a} imports {b} (line {graph[a][b].line})" for a, b in itertools.pairwise(cycle)
    )


def reachable(graph: Graph, *starts: str) -> set[str]:
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, {}))
    return seen


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from . import b\n")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.sub.b import X\n"
        "def f():\n    import pkg.c\n"
    )
    (package / "sub" / "b.py").write_text("from ..a import f\nX = 1\n")
    (package / "c.py").write_text("from pkg.sub import b\nfrom pkg import a as _a\n")
    graph = import_graph(tmp_path, "pkg")
    assert set(graph["pkg.a"]) == {"pkg.sub.b", "pkg.c"}
    assert set(graph["pkg.sub"]) == {"pkg.sub.b"}
    assert set(graph["pkg.sub.b"]) == {"pkg.a"}
    assert set(graph["pkg.c"]) == {"pkg.sub.b", "pkg.a"}  # parents are not edges
    cycle = find_cycle(graph)
    assert cycle == ["pkg.a", "pkg.c", "pkg.a"]
    assert describe(cycle, graph) == (
        "  pkg.a imports pkg.c (line 5)\n  pkg.c imports pkg.a (line 2)"
    )


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph()


def test_no_module_of_the_package_takes_part_in_an_import_cycle(graph: Graph) -> None:
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle:\n" + describe(cycle, graph)


def _entry_point(module: str) -> bool:
    top = module.split(".")[1] if "." in module else ""
    return top in ("handlers", "cli", "local", "console", "__main__")


def test_only_the_entry_points_build_the_scheduler(graph: Graph) -> None:
    """``wiring`` builds the ticker and the recorder from Settings: the handlers, the CLI and the
    local run use it; a store or a dispatcher takes what it needs (``aws.py`` for clients)."""
    users = sorted(m for m, edges in graph.items() if f"{PACKAGE}.wiring" in edges)
    assert users and all(_entry_point(m) for m in users), users


def test_the_lambda_handlers_never_reach_the_local_run_or_the_cli(graph: Graph) -> None:
    """What the function build leaves out of the Lambda package (src/Makefile) is never
    imported by a handler, however lazily."""
    handlers = [m for m in graph if m.startswith(f"{PACKAGE}.handlers.")]
    reached = reachable(graph, *handlers)
    left_out = (["local"], ["cli"], ["console"], ["__main__"])
    assert not sorted(m for m in reached if m.split(".")[1:2] in left_out)


def test_the_console_and_the_local_run_import_nothing_from_the_cli(graph: Graph) -> None:
    """The views the CLI and the console share (regions done one by one, a run's note) live
    below both (``fleet``, ``notes``): neither front end reaches into the other."""
    fronts = [m for m in graph if m.split(".")[1:2] in (["console"], ["local"])]
    into_cli = sorted(
        f"{m} imports {target} (line {edge.line})"
        for m in fronts
        for target, edge in graph[m].items()
        if target.split(".")[1:2] == ["cli"]
    )
    assert not into_cli, into_cli


NOT_AT_A_COLD_START = (
    f"{PACKAGE}.operator",
    f"{PACKAGE}.backfill",
    f"{PACKAGE}.fleet",
    f"{PACKAGE}.schedules",
    f"{PACKAGE}.schedule_entry",
    f"{PACKAGE}.failures",
    f"{PACKAGE}.retries",
    f"{PACKAGE}.alerts",
    f"{PACKAGE}.recorder",
    f"{PACKAGE}.carry",
    f"{PACKAGE}.handlers.events.operator",
    f"{PACKAGE}.cron.unix",
    "difflib",
)
"""What the ticker's handler module does not import (issue 28, point 7): a tick of cron.yaml's
jobs needs none of them, and each is imported where it is used (an operator event, a run that
failed, a runtime schedule's firing, a suggestion for a wrong key, a region's peers, a refused
cron statement's Unix hint). ``make
bench`` times the import ("3 cold start"); this says which modules it loads, which no timing
can."""


def test_importing_the_ticker_handler_loads_nothing_a_tick_does_not_need() -> None:
    code = f"import sys, {PACKAGE}.handlers.ticker; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(  # nosec B603 # this interpreter, a fresh one: its own sys.modules
        [sys.executable, "-B", "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded = set(done.stdout.split())
    assert f"{PACKAGE}.handlers.ticker" in loaded
    assert not sorted(
        name
        for name in loaded
        if any(name == lazy or name.startswith(f"{lazy}.") for lazy in NOT_AT_A_COLD_START)
    )


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    code = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run(  # nosec B603 # this interpreter, a fresh one: its own sys.modules
        [sys.executable, "-B", "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(done.stdout.split())


def test_a_tick_event_is_parsed_without_the_operator_events() -> None:
    """The operator's events (their classes, their parsers) load at the first event that is not
    a tick: a container that only ever ticks never pays for them."""
    events = f"{PACKAGE}.handlers.events"
    parse = f"from {events}.ticker import ticker_request\n"
    ticks = parse + "ticker_request({'tick': '2026-11-30T14:00:00Z'})"
    assert f"{events}.operator" not in _loaded_after(ticks)
    run = parse + "ticker_request({'job': 'morning-report', 'operator': 'jane.doe'})"
    assert f"{events}.operator" in _loaded_after(run)
