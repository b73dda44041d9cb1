"""Cold start: importing the ticker handler's module, against ``import boto3`` alone.

Each import runs in a fresh interpreter (this virtualenv's), timed inside it around the import
statement: CPU time (``time.process_time``, the figure: what the machine's other work disturbs
least) and wall time, best of N, the two modules interleaved so that both see the same noise.

Two conditions, each with a private bytecode cache (``PYTHONPYCACHEPREFIX``, so nothing is
written into the source tree or the virtualenv):

* bytecode cached: every module's ``.pyc`` exists (an untimed import fills the cache first);
* no bytecode: nothing cached and nothing written (``PYTHONDONTWRITEBYTECODE``), so every module
  is compiled from source at every import. This is what the Lambda package ``sam build`` makes
  with ``src/Makefile`` gets: ``pip install --no-compile`` and ``__pycache__`` removed, on a
  read-only ``/var/task`` where Python cannot write what it compiled.

``python -X importtime`` (best of N per module) names what the handler imports beyond boto3.
"""

from __future__ import annotations

import os
import re
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
_PROBE = (
    "import time\n"
    "cpu, wall = time.process_time(), time.perf_counter()\n"
    "import {module}\n"
    "print(time.process_time() - cpu, time.perf_counter() - wall)\n"
)
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Timing:
    cpu: float  # best of N, seconds
    wall: float


@dataclass(frozen=True)
class ColdStart:
    repeats: int
    cached: dict[str, Timing]  # module -> best timing, bytecode cached
    compiled: dict[str, Timing]  # ... no bytecode
    beyond: list[tuple[str, float]]  # (package, self seconds) the handler adds to boto3's


def _environment(cache: Path, bytecode: bool, path: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPROFILE")}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if path is not None:
        env["PYTHONPATH"] = path
    return env


def _python(code: str, env: Mapping[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", code],
        env=dict(env),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )


def _once(module: str, env: Mapping[str, str]) -> Timing:
    cpu, wall = _python(_PROBE.format(module=module), env).stdout.split()
    return Timing(float(cpu), float(wall))


def _best(env: Mapping[str, str], repeats: int) -> dict[str, Timing]:
    runs: dict[str, list[Timing]] = {BASELINE: [], HANDLER: []}
    for _ in range(repeats):
        for module, timings in runs.items():  # interleaved: both see the same noise
            timings.append(_once(module, env))
    return {
        module: Timing(min(t.cpu for t in timings), min(t.wall for t in timings))
        for module, timings in runs.items()
    }


def _self_times(module: str, env: Mapping[str, str], repeats: int) -> dict[str, float]:
    """Seconds of each imported module's own time (``-X importtime`` self), best of N."""
    best: dict[str, float] = {}
    for _ in range(repeats):
        err = _python(f"import {module}", env, "-X", "importtime").stderr
        for found in _IMPORTTIME.finditer(err):
            name, own = found.group(4), int(found.group(1)) / 1e6
            best[name] = min(best.get(name, own), own)
    return best


def _group(name: str) -> str:
    return "mini_scheduler" if name.startswith("mini_scheduler") else name.split(".")[0]


def measure(repeats: int = 7, path: str | None = None) -> ColdStart:
    """``path``: a PYTHONPATH to put first (a scratch copy of ``src`` to try a change on)."""
    with tempfile.TemporaryDirectory(prefix="bench-pyc-") as cached_dir:
        cached_env = _environment(Path(cached_dir), True, path)
        _python(f"import {BASELINE}, {HANDLER}", cached_env)  # fill the cache, untimed
        cached = _best(cached_env, repeats)
        baseline_own = _self_times(BASELINE, cached_env, max(3, repeats // 2))
        handler_own = _self_times(HANDLER, cached_env, max(3, repeats // 2))
    with tempfile.TemporaryDirectory(prefix="bench-nopyc-") as empty_dir:
        compiled = _best(_environment(Path(empty_dir), False, path), repeats)
    extra: defaultdict[str, float] = defaultdict(float)
    for name, own in handler_own.items():
        if name not in baseline_own:
            extra[_group(name)] += own
    beyond = sorted(extra.items(), key=lambda item: -item[1])[:6]
    return ColdStart(repeats, cached, compiled, beyond)


def rows(result: ColdStart) -> list[Row]:
    cached, compiled = result.cached, result.compiled
    h, b = cached[HANDLER], cached[BASELINE]
    hc, bc = compiled[HANDLER], compiled[BASELINE]
    n = result.repeats
    return [
        Row(
            "3 cold start",
            f"import handlers.ticker, fresh interpreter, .pyc cached (CPU, best of {n})",
            f"{h.cpu * 1000:.0f} ms",
            f"import boto3 alone: {b.cpu * 1000:.0f} ms",
            ratio(h.cpu, b.cpu, digits=2),
            "<= 1.5x",
            h.cpu <= 1.5 * b.cpu,
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
            f"the same without .pyc (as src/Makefile packages it; CPU, best of {n})",
            f"{hc.cpu * 1000:.0f} ms",
            f"import boto3 alone, no .pyc: {bc.cpu * 1000:.0f} ms",
            ratio(hc.cpu, bc.cpu, digits=2),
            "<= 1.5x",
            hc.cpu <= 1.5 * bc.cpu,
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
    return f"imported by handlers.ticker beyond boto3 (-X importtime self, best of): {beyond}"
