"""How the CLI finds a running ``make run``: while it runs it keeps a small JSON file saying where
its AWS is (the endpoint on 127.0.0.1, its regions, its stack's name, its cron file), removed
when it stops; ``--local`` reads it. Imports nothing heavy: the CLI reads it at start.

The files are ``local-<pid>.json`` in ``MINI_SCHEDULER_LOCAL_DIR``, else
``$XDG_RUNTIME_DIR/mini-scheduler``, else ``~/.cache/mini-scheduler``: one per running
``make run`` (two worktrees may each run one). A file whose process is gone is left behind by a
run that was killed, and is ignored. An endpoint that is not ``http://127.0.0.1:<port>`` is
refused, so a file never sends the CLI's calls to AWS.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

DIR_VARIABLE: Final = "MINI_SCHEDULER_LOCAL_DIR"
_LOOPBACK_URL: Final = re.compile(r"http://127\.0\.0\.1:\d{1,5}")
_NAME: Final = re.compile(r"local-(\d+)\.json")


class NoLocalRun(LookupError):
    """No ``make run`` is running on this machine (or its file cannot be read)."""


@dataclass(frozen=True, slots=True)
class LocalRun:
    """A running ``make run``: where the CLI reaches it."""

    endpoint: str  # http://127.0.0.1:<port>
    regions: tuple[str, ...]  # the home region first
    stack: str
    cron_file: str
    pid: int
    started: str  # ISO 8601, UTC

    def to_json(self) -> str:
        fields = asdict(self)
        fields["regions"] = list(self.regions)
        return json.dumps(fields, indent=2)


def run_dir(environ: Mapping[str, str]) -> Path:
    """Where the running ``make run``'s files are."""
    given = environ.get(DIR_VARIABLE, "").strip()
    if given:
        return Path(given)
    runtime = environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime:
        return Path(runtime) / "mini-scheduler"
    return Path.home() / ".cache" / "mini-scheduler"


@contextlib.contextmanager
def announced(run: LocalRun, folder: Path) -> Iterator[Path]:
    """``run``'s file in ``folder`` (readable by its owner only) while the block runs."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"local-{run.pid}.json"
    written = path.with_suffix(".tmp")
    written.write_text(run.to_json() + "\n")
    written.chmod(0o600)
    written.replace(path)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive, but not ours to read
        return False
    return True


def _read(path: Path) -> LocalRun | None:
    """The run a file describes; None when it is not one the CLI may use."""
    try:
        fields = json.loads(path.read_text())
        run = LocalRun(
            endpoint=str(fields["endpoint"]),
            regions=tuple(str(r) for r in fields["regions"]),
            stack=str(fields["stack"]),
            cron_file=str(fields["cron_file"]),
            pid=int(fields["pid"]),
            started=str(fields["started"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _LOOPBACK_URL.fullmatch(run.endpoint) or not run.regions:
        return None
    return run


def running(environ: Mapping[str, str]) -> list[LocalRun]:
    """The ``make run`` processes running now, the latest started first."""
    folder = run_dir(environ)
    try:
        paths = sorted(folder.iterdir())
    except OSError:
        return []
    runs = [
        run
        for path in paths
        if (name := _NAME.fullmatch(path.name))
        and _alive(int(name[1]))
        and (run := _read(path)) is not None
    ]
    return sorted(runs, key=lambda run: run.started, reverse=True)


def find(environ: Mapping[str, str]) -> LocalRun:
    """The running ``make run`` (the latest started, when there are several); NoLocalRun
    saying how to start one."""
    runs = running(environ)
    if not runs:
        raise NoLocalRun(
            "no make run is running on this machine: start it (make run, or make run "
            "REGIONS=us-east-1,us-west-2) and run this again in another terminal"
        )
    return runs[0]
