"""Cold start: importing the ticker handler's module, against ``import boto3`` alone.

Each import runs in a fresh interpreter (this virtualenv's), timed inside it around the import
statement: CPU time (``time.process_time``, the figure: what the machine's other work disturbs
least) and wall time, best of N, the two modules interleaved so that both see the same noise.

The imports run as on Lambda: from a package folder first on ``sys.path`` (like ``/var/task``),
a copy of what they load from this repository's ``src`` and the virtualenv's site-packages, with
``python -I -B`` (nothing written, like the read-only ``/var/task``), the standard library's
own bytecode used (on Lambda the runtime's standard library is compiled). Two conditions:

* no bytecode: the package without ``.pyc`` files, so its modules are compiled from source at
  every import. This is what ``make build`` ships when it has no Python 3.13 to compile with;
* bytecode: the same folder compiled as ``src/Makefile`` compiles it (``compileall``,
  unchecked-hash ``.pyc``), what ``make build`` ships with a Python 3.13.

One ``python -v`` import checks the conditions: with no bytecode, every module of the package
is compiled from its source and none comes from elsewhere (``ColdStart.modules`` counts them,
``ColdStart.stdlib_compiled`` the standard library's modules that had no bytecode). ``python -X
importtime`` (best of N per module) names what the handler imports beyond boto3.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmarks.table import Row, ratio

HANDLER = "mini_scheduler.handlers.ticker"
BASELINE = "boto3"
TARGET = 1.3
"""Issue 28 (point 7): importing the handler costs at most this many times ``import boto3``, with
bytecode and without (it was 1.5-1.7x while the handler imported the operator, final failures,
runtime schedules and the rest that a tick of cron.yaml's jobs never needs)."""
# Run with -I -B: the package folder first on sys.path, as /var/task is on Lambda.
_PROBE = (
    "import sys; sys.path.insert(0, {package!r})\n"
    "import time\n"
    "cpu, wall = time.process_time(), time.perf_counter()\n"
    "import {module}\n"
    "print(time.process_time() - cpu, time.perf_counter() - wall)\n"
)
# What importing both modules loads from outside the standard library: (sys.path entry, its
# top-level file or folder), as JSON. The modules already there at startup (a .pth file's) are
# not the imports'.
_LOADED = """
import json, os, sys, sysconfig
before = set(sys.modules)
import {modules}
paths = sysconfig.get_paths()
stdlib = [os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")]
site = [os.path.realpath(paths[k]) + os.sep for k in ("purelib", "platlib")]
entries = sorted({{os.path.realpath(e) + os.sep for e in sys.path if e}}, key=len, reverse=True)
found = set()
for name in set(sys.modules) - before:
    file = getattr(sys.modules[name], "__file__", None)
    if not file:
        continue
    file = os.path.realpath(file)
    if any(file.startswith(d) for d in stdlib) and not any(file.startswith(d) for d in site):
        continue
    entry = next((e for e in entries if file.startswith(e)), None)
    if entry is not None:  # else the package check names it
        found.add((entry, file[len(entry):].split(os.sep)[0]))
print(json.dumps(sorted(found)))
"""
# The modules the imports load from neither the package folder nor the standard library.
_STRAYS = """
import os, sys, sysconfig
sys.path.insert(0, {package!r})
before = set(sys.modules)
import {modules}
paths = sysconfig.get_paths()
inside = tuple(os.path.realpath(p) + os.sep for p in (paths["stdlib"], paths["platstdlib"]))
inside += (os.path.realpath(sys.path[0]) + os.sep,)
for name in sorted(set(sys.modules) - before):
    file = getattr(sys.modules[name], "__file__", None)
    if file and not os.path.realpath(file).startswith(inside):
        print(name, file)
"""
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")
# python -v: "# code object from '<.pyc>'" for a module read from its bytecode, "# code object
# from <.py>" (no quotes) for one compiled from its source.
_FROM_SOURCE = re.compile(r"^# code object from ([^'].*\.py)$", re.M)
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Timing:
    cpu: float  # best of N, seconds
    wall: float


@dataclass(frozen=True)
class ColdStart:
    repeats: int
    cached: dict[str, Timing]  # module -> best timing, bytecode shipped
    compiled: dict[str, Timing]  # ... no bytecode
    beyond: list[tuple[str, float]]  # (package, self seconds) the handler adds to boto3's
    modules: int = 0  # the package's modules compiled at every import without bytecode
    stdlib_compiled: tuple[str, ...] = ()  # standard library modules with no bytecode


def _environment(path: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPROFILE")}
    if path is not None:
        env["PYTHONPATH"] = path
    return env


def _python(
    code: str, *flags: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """This interpreter, writing no bytecode (-B: nothing written into src or the virtualenv
    either) and isolated (-I: no PYTHON* variable, no current folder on sys.path); or, given
    ``env``, in that environment."""
    isolated = ("-I",) if env is None else ()
    return subprocess.run(
        [sys.executable, "-B", *isolated, *flags, "-c", code],
        env=dict(os.environ if env is None else env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )


def package(folder: Path, path: str | None = None) -> Path:
    """A copy in ``folder`` of what importing the two modules loads beyond the standard library
    (this repository's src, the virtualenv's site-packages, ``path``), with no ``__pycache__``."""
    code = _LOADED.format(modules=f"{BASELINE}, {HANDLER}")
    loaded: list[tuple[str, str]] = json.loads(_python(code, env=_environment(path)).stdout)
    for entry, name in loaded:
        source = Path(entry, name)
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, folder / name)
    return folder


def compile_package(folder: Path) -> None:
    """As src/Makefile compiles the Lambda package."""
    mode = ("--invalidation-mode", "unchecked-hash")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *mode, str(folder)],
        check=True,
        capture_output=True,
        timeout=600,
    )


def _check(folder: Path) -> tuple[int, tuple[str, ...]]:
    """One import of both modules from ``folder``, without bytecode, under ``python -v``: how
    many of the package's modules were compiled from source, and which standard library ones
    were; an error when the imports loaded a module from neither the package nor the standard
    library."""
    done = _python(_STRAYS.format(package=str(folder), modules=f"{BASELINE}, {HANDLER}"), "-v")
    if done.stdout.strip():
        raise RuntimeError(f"imported from outside {folder}:\n{done.stdout}")
    found = _FROM_SOURCE.findall(done.stderr)
    inside = [f for f in found if f.startswith(f"{folder}{os.sep}")]
    return len(inside), tuple(sorted(f for f in found if f not in inside))


def _once(module: str, folder: Path) -> Timing:
    cpu, wall = _python(_PROBE.format(package=str(folder), module=module)).stdout.split()
    return Timing(float(cpu), float(wall))


def _best(folder: Path, repeats: int) -> dict[str, Timing]:
    runs: dict[str, list[Timing]] = {BASELINE: [], HANDLER: []}
    for _ in range(repeats):
        for module, timings in runs.items():  # interleaved: both see the same noise
            timings.append(_once(module, folder))
    return {
        module: Timing(min(t.cpu for t in timings), min(t.wall for t in timings))
        for module, timings in runs.items()
    }


def _self_times(module: str, folder: Path, repeats: int) -> dict[str, float]:
    """Seconds of each imported module's own time (``-X importtime`` self), best of N."""
    best: dict[str, float] = {}
    code = f"import sys; sys.path.insert(0, {str(folder)!r})\nimport {module}"
    for _ in range(repeats):
        err = _python(code, "-X", "importtime").stderr
        for found in _IMPORTTIME.finditer(err):
            name, own = found.group(4), int(found.group(1)) / 1e6
            best[name] = min(best.get(name, own), own)
    return best


def _group(name: str) -> str:
    return "mini_scheduler" if name.startswith("mini_scheduler") else name.split(".")[0]


def measure(repeats: int = 7, path: str | None = None) -> ColdStart:
    """``path``: a PYTHONPATH to put first (a scratch copy of ``src`` to try a change on)."""
    with tempfile.TemporaryDirectory(prefix="bench-coldstart-") as scratch:
        folder = package(Path(scratch), path)
        modules, stdlib_compiled = _check(folder)
        compiled = _best(folder, repeats)
        compile_package(folder)
        cached = _best(folder, repeats)
        baseline_own = _self_times(BASELINE, folder, max(3, repeats // 2))
        handler_own = _self_times(HANDLER, folder, max(3, repeats // 2))
    extra: defaultdict[str, float] = defaultdict(float)
    for name, own in handler_own.items():
        if name not in baseline_own:
            extra[_group(name)] += own
    beyond = sorted(extra.items(), key=lambda item: -item[1])[:6]
    return ColdStart(repeats, cached, compiled, beyond, modules, stdlib_compiled)


def rows(result: ColdStart) -> list[Row]:
    cached, compiled = result.cached, result.compiled
    h, b = cached[HANDLER], cached[BASELINE]
    hc, bc = compiled[HANDLER], compiled[BASELINE]
    n = result.repeats
    return [
        Row(
            "3 cold start",
            f"import handlers.ticker, fresh interpreter, package with .pyc (CPU, best of {n})",
            f"{h.cpu * 1000:.0f} ms",
            f"import boto3 alone: {b.cpu * 1000:.0f} ms",
            ratio(h.cpu, b.cpu, digits=2),
            f"<= {TARGET:g}x",
            h.cpu <= TARGET * b.cpu,
        ),
        Row(
            "3 cold start",
            f"  the same, wall clock (best of {n})",
            f"{h.wall * 1000:.0f} ms",
            f"import boto3 alone: {b.wall * 1000:.0f} ms",
            ratio(h.wall, b.wall, digits=2),
        ),
        Row(
            "3 cold start",
            f"the same without .pyc (a build with no python3.13; CPU, best of {n})",
            f"{hc.cpu * 1000:.0f} ms",
            f"import boto3 alone, no .pyc: {bc.cpu * 1000:.0f} ms",
            ratio(hc.cpu, bc.cpu, digits=2),
            f"<= {TARGET:g}x",
            hc.cpu <= TARGET * bc.cpu,
        ),
        Row(
            "3 cold start",
            "  handlers.ticker without .pyc against with .pyc (CPU)",
            f"{hc.cpu * 1000:.0f} ms",
            f"with .pyc: {h.cpu * 1000:.0f} ms",
            ratio(hc.cpu, h.cpu),
        ),
    ]


def note(result: ColdStart) -> str:
    beyond = ", ".join(f"{name} {own * 1000:.0f} ms" for name, own in result.beyond)
    stdlib = ", ".join(result.stdlib_compiled) or "none"
    return (
        f"imported by handlers.ticker beyond boto3 (-X importtime self, best of): {beyond}; "
        f"without .pyc, {result.modules} modules of the package compiled at every import "
        f"(standard library modules without bytecode: {stdlib})"
    )
