"""AWS's own DynamoDB Local for the test suite, fetched and started by the test run itself.

The emulator ships in the npm package ``amplify-dynamodb-simulator`` (``emulator/DynamoDBLocal.jar``
and its native libraries in ``emulator/DynamoDBLocal_lib``). ``npm pack`` fetches that tarball
from the npm registry without any of its npm dependencies; only ``package/emulator/`` is unpacked,
into a git-ignored cache (``<repo>/.cache/dynamodb-local/<version>/emulator``). Nothing but the
npm registry is contacted, and the emulator runs with ``-disableTelemetry``.

Unlike moto, DynamoDB Local applies conditional writes atomically and enforces the service's own
validation, so it is the emulator to use for anything about claims and exclusivity.

This module is a pytest plugin (registered in ``tests/conftest.py``) providing two fixtures:

* ``dynamodb_local_endpoint`` (session scope): one emulator per session, so one per xdist
  worker; yields its endpoint URL.
* ``dynamodb_local`` (function scope): a boto3 DynamoDB client for that endpoint.

Every emulator is in memory and shared by the tests of one session: use unique table names.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import fcntl
import functools
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Self

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PACKAGE = "amplify-dynamodb-simulator"
VERSION = "2.9.30"
# What `npm pack --json` reports for this version; checked again after the download.
TARBALL_INTEGRITY = (
    "sha512-"
    "xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ=="
)
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_DIR = REPO_ROOT / ".cache" / "dynamodb-local" / VERSION

REGION = "us-east-1"
ACCESS_KEY_ID = "testing"
SECRET_ACCESS_KEY = "testing"

NPM_MISSING = "npm is needed to fetch DynamoDB Local: install Node.js/npm, e.g. apt-get install npm"
JAVA_MISSING = "Java 17+ is needed to run DynamoDB Local: apt-get install openjdk-17-jre-headless"

_EMULATOR = "emulator"
_JAR = "DynamoDBLocal.jar"
_LIB = "DynamoDBLocal_lib"
_MEMBER_PREFIX = f"package/{_EMULATOR}/"
_NPM_TIMEOUT_S = 600.0
_OUTPUT_TAIL_CHARS = 4000
_MAIN_THREAD_DIED = 'Exception in thread "main"'
_BIND_FAILED = "java.net.BindException"


class EmulatorError(RuntimeError):
    """DynamoDB Local could not be fetched, unpacked or started."""


# --- fetching ---------------------------------------------------------------------------------


def ensure_emulator(cache_dir: Path | None = None) -> Path:
    """The unpacked ``emulator`` directory, fetched with ``npm pack`` on first use.

    Safe under parallel pytest-xdist workers: the fetch runs under an exclusive lock on
    ``<cache_dir>/.lock``, and the tree is unpacked beside its final place and renamed into it,
    so its presence means it is complete.
    """
    cache = (cache_dir if cache_dir is not None else DEFAULT_CACHE_DIR).resolve()
    target = cache / _EMULATOR
    if _is_complete(target):
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(cache / ".lock"):
        if _is_complete(target):
            return target
        npm = shutil.which("npm")
        if npm is None:
            raise EmulatorError(NPM_MISSING)
        # Only a lock holder creates these, so any left now are from a run that died mid-way.
        for leftover in cache.glob(".staging-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        if target.exists():  # not complete, yet there: someone tampered with it
            shutil.rmtree(target)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache))
        try:
            # The tarball goes to the system temp dir, never into the repository.
            with tempfile.TemporaryDirectory(prefix="dynamodb-local-npm-") as download:
                tarball = _npm_pack(npm, Path(download))
                _check_integrity(tarball)
                _extract_emulator(tarball, staging)
            unpacked = staging / "package" / _EMULATOR
            if not _is_complete(unpacked):
                raise EmulatorError(
                    f"{PACKAGE}@{VERSION} has no {_EMULATOR}/{_JAR} and {_EMULATOR}/{_LIB}/"
                )
            os.rename(unpacked, target)  # atomic: same parent file system
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _is_complete(emulator: Path) -> bool:
    return (emulator / _JAR).is_file() and (emulator / _LIB).is_dir()


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _npm_pack(npm: str, directory: Path) -> Path:
    spec = f"{PACKAGE}@{VERSION}"
    environment = {
        **os.environ,
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }
    try:
        result = subprocess.run(
            [npm, "pack", spec, "--ignore-scripts"],
            cwd=directory,
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_NPM_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise EmulatorError(f"`npm pack {spec}` took more than {_NPM_TIMEOUT_S:.0f} s") from exc
    if result.returncode != 0:
        raise EmulatorError(
            f"`npm pack {spec}` failed with exit code {result.returncode}:\n"
            f"{result.stderr.strip()}\n{result.stdout.strip()}"
        )
    tarballs = sorted(directory.glob("*.tgz"))
    if len(tarballs) != 1:
        raise EmulatorError(f"`npm pack {spec}` left {len(tarballs)} tarballs, expected one")
    return tarballs[0]


def _check_integrity(tarball: Path) -> None:
    digest = hashlib.sha512()
    with tarball.open("rb") as handle:
        for chunk in iter(functools.partial(handle.read, 1 << 20), b""):
            digest.update(chunk)
    actual = "sha512-" + base64.b64encode(digest.digest()).decode("ascii")
    if actual != TARBALL_INTEGRITY:
        raise EmulatorError(f"{tarball.name} has integrity {actual}, expected {TARBALL_INTEGRITY}")


def _safe_member(member: tarfile.TarInfo, destination: str) -> tarfile.TarInfo:
    """Refuse anything but plain files and directories under relative, ``..``-free paths."""
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts or "\\" in member.name:
        raise EmulatorError(f"refusing unsafe path in the {PACKAGE} tarball: {member.name!r}")
    if not (member.isfile() or member.isdir()):
        raise EmulatorError(f"refusing a link or special file in the tarball: {member.name!r}")
    data_filter: Callable[[tarfile.TarInfo, str], tarfile.TarInfo] | None = getattr(
        tarfile, "data_filter", None
    )
    return data_filter(member, destination) if data_filter is not None else member


def _extract_emulator(tarball: Path, destination: Path) -> None:
    """Unpack only ``package/emulator/`` of the tarball into ``destination``, in one pass."""
    with tarfile.open(tarball, "r|gz") as archive:
        for member in archive:
            if not member.name.startswith(_MEMBER_PREFIX):
                continue
            checked = _safe_member(member, str(destination))
            if hasattr(tarfile, "data_filter"):
                archive.extract(checked, destination, filter="fully_trusted")
            else:  # Python < 3.11.4: the checks above are all there is
                archive.extract(checked, destination)


# --- running ----------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def make_client(endpoint: str, **config: Any) -> DynamoDBClient:
    """A boto3 DynamoDB client for an emulator, with dummy credentials and short timeouts.

    No retries: a retried conditional put can report a ConditionalCheckFailedException for
    its own first, successful attempt, which would hide exactly what claim tests measure.
    """
    settings: dict[str, Any] = {
        "connect_timeout": 2,
        "read_timeout": 15,
        "retries": {"total_max_attempts": 1},
        "max_pool_connections": 64,
        **config,
    }
    return _boto_session().client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        config=Config(**settings),
    )


@functools.cache
def _boto_session() -> boto3.session.Session:
    # A session of our own: creating clients from boto3's shared default session is not
    # thread-safe, and one session keeps the service model loaded once.
    return boto3.session.Session()


class DynamoDBLocal:
    """One DynamoDB Local process on a free port of 127.0.0.1, in memory.

    Use it as a context manager (or call ``start``/``stop``). The process is stopped on exit,
    at interpreter exit (atexit), and on Linux also when this process dies (parent-death signal).
    """

    def __init__(
        self,
        emulator_dir: Path | None = None,
        *,
        port: int | None = None,
        shared_db: bool = False,
        startup_timeout: float = 60.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self._emulator_dir = emulator_dir
        self._requested_port = port
        self._shared_db = shared_db
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._stdout: IO[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._port: int | None = None
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmulatorError("DynamoDB Local is not running")
        return self._port

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The emulator's process (the JVM), while it runs: the bench reads its CPU time."""
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        if self._process is not None:
            raise EmulatorError("DynamoDB Local is already running")
        java = shutil.which("java")
        if java is None:
            raise EmulatorError(JAVA_MISSING)
        emulator = self._emulator_dir if self._emulator_dir is not None else ensure_emulator()
        attempts = 1 if self._requested_port is not None else 3
        for attempt in range(1, attempts + 1):
            port = self._requested_port if self._requested_port is not None else free_port()
            try:
                self._launch(java, emulator, port)
                self._wait_until_ready()
            except _PortTaken:
                self.stop()
                if attempt == attempts:
                    raise
            except BaseException:
                self.stop()
                raise
            else:
                return

    def stop(self) -> None:
        """Terminate the process (kill it if it does not stop in time); idempotent."""
        with self._lock:
            process, self._process = self._process, None
            atexit.unregister(self.stop)
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=self._stop_timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            for stream in (self._stdout, self._stderr):
                if stream is not None:
                    stream.close()
            self._stdout = self._stderr = None
            self._port = None

    def output(self, tail: int | None = _OUTPUT_TAIL_CHARS) -> str:
        """What the process wrote to stdout and stderr so far: the last ``tail`` chars of each."""
        parts = []
        for name, stream in (("stdout", self._stdout), ("stderr", self._stderr)):
            if stream is None:
                continue
            stream.flush()
            stream.seek(0)
            text = stream.read().decode("utf-8", errors="replace").strip()
            stream.seek(0, os.SEEK_END)
            parts.append(f"--- {name} ---\n{text if tail is None else text[-tail:]}")
        return "\n".join(parts)

    def _launch(self, java: str, emulator: Path, port: int) -> None:
        command = [
            java,
            f"-Djava.library.path={emulator / _LIB}",
            "-jar",
            str(emulator / _JAR),
            "-inMemory",
            "-port",
            str(port),
            "-disableTelemetry",
        ]
        if self._shared_db:
            command.append("-sharedDb")
        # Files, not pipes: nobody reads them while it runs, and a full pipe would block it.
        # They live as long as the process; stop() closes them.
        self._stdout = tempfile.TemporaryFile()  # noqa: SIM115
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self._port = port
        atexit.register(self.stop)
        self._process = subprocess.Popen(
            command,
            cwd=emulator,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr,
            preexec_fn=_die_with_parent(),
        )

    def _wait_until_ready(self) -> None:
        process = self._process
        assert process is not None
        probe = make_client(self.endpoint, connect_timeout=0.5, read_timeout=2)
        deadline = time.monotonic() + self._startup_timeout
        last_error: Exception | None = None
        try:
            while True:
                code = process.poll()
                output = self.output(tail=None)
                # A failed start does not end the JVM (Jetty's threads outlive the main
                # thread), so look for the main thread's death in its output too.
                if code is not None or _MAIN_THREAD_DIED in output:
                    error = _PortTaken if _BIND_FAILED in output else EmulatorError
                    state = "did not start" if code is None else f"exited with code {code}"
                    raise error(f"DynamoDB Local {state} on {self.endpoint}\n{self.output()}")
                try:
                    probe.list_tables(Limit=1)
                except (BotoCoreError, ClientError) as exc:
                    last_error = exc
                else:
                    if _listens_on(process.pid, self.port) is False:
                        raise _PortTaken(
                            f"another process answers on {self.endpoint}\n{self.output()}"
                        )
                    return
                if time.monotonic() >= deadline:
                    raise EmulatorError(
                        f"DynamoDB Local did not answer on {self.endpoint} within "
                        f"{self._startup_timeout:.0f} s (last error: {last_error!r})\n"
                        f"{self.output()}"
                    )
                time.sleep(0.1)
        finally:
            probe.close()


class _PortTaken(EmulatorError):
    """The chosen port was taken by someone else before DynamoDB Local bound it."""


def _die_with_parent() -> Callable[[], None] | None:
    """On Linux, a ``preexec_fn`` that has the child killed when this process dies.

    The parent-death signal fires when the *thread* that started the child exits, so it is only
    used from the main thread (where pytest runs fixtures, xdist workers included).
    """
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        # SIGTERM, not SIGKILL: the JVM then still runs its exit hooks, which delete the native
        # library sqlite4java copies into the temp dir at start-up.
        prctl(pr_set_pdeathsig, int(signal.SIGTERM))
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def _listens_on(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds a TCP socket listening on ``port``; None if unknowable."""
    try:
        inodes: set[str] = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(FileNotFoundError), open(table, encoding="ascii") as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    local_port = int(fields[1].rsplit(":", 1)[1], 16)
                    if local_port == port and fields[3] == "0A":  # 0A: LISTEN
                        inodes.add(fields[9])
        sockets = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                sockets.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    except (OSError, ValueError, IndexError):
        return None
    return any(f"socket:[{inode}]" in sockets for inode in inodes)


# --- pytest fixtures --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def dynamodb_local_endpoint() -> Iterator[str]:
    """The endpoint URL of one DynamoDB Local per session (so per xdist worker)."""
    with DynamoDBLocal() as emulator:
        yield emulator.endpoint


@pytest.fixture
def dynamodb_local(dynamodb_local_endpoint: str) -> Iterator[DynamoDBClient]:
    """A boto3 DynamoDB client for the session's DynamoDB Local (dummy credentials)."""
    client = make_client(dynamodb_local_endpoint)
    try:
        yield client
    finally:
        client.close()
