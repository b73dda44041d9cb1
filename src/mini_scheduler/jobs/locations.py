"""Where the cron file is read from: ``CRON_FILE``, a comma-separated list, the first found wins.

Each location is ``s3://bucket/key``, ``file:<path>`` (``file:///abs/path`` too), or a bare path
(read as ``file:``), like Mercury's ``yaml.cron``. Without ``CRON_FILE`` the file packaged with
the function is read: ``cron.yaml`` in ``LAMBDA_TASK_ROOT``, or in the current directory
outside Lambda.

A location that does not exist (S3 ``NoSuchKey``/``NoSuchBucket``/404, no such local file) moves
on to the next; any other failure (``AccessDenied``, a directory, an unreadable file) is a
:class:`CronFileError` naming the location: a file that is there but cannot be read must not be
silently replaced by the next one. Note that S3 answers ``AccessDenied`` (403), not 404, for a
missing key when the caller may not ``s3:ListBucket`` the bucket: grant it to make a missing
object read as missing.

:class:`CronFileSource` is what a warm Lambda container keeps between ticks. It asks S3 with a
conditional ``GetObject`` (``IfNoneMatch`` = the ETag it holds): an unchanged object costs one
request and no body (S3 answers 304 Not Modified, which botocore raises as a ``ClientError``
with code ``304``; moto 5 does the same), and a changed one is read in that same request, so a
tick never pays a ``HeadObject`` and a ``GetObject``. A local file is re-read when its
mtime, ctime, size or inode changed.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from mini_scheduler.errors import CronFileError, CronFileUnreadableError
from mini_scheduler.jobs.loader import load
from mini_scheduler.jobs.model import DEFAULT_TIMEZONE, CronFile
from mini_scheduler.jobs.targets import TargetRules
from mini_scheduler.jobs.yaml import MAX_FILE_BYTES

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["CronFileSource", "Location", "default_locations", "parse_locations"]

DEFAULT_FILE_NAME: Final = "cron.yaml"
_BUCKET: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_MISSING_CODES: Final = frozenset({"NoSuchKey", "NoSuchBucket", "NotFound", "404"})
_NOT_MODIFIED_CODES: Final = frozenset({"304", "NotModified", "Not Modified"})


@dataclass(frozen=True, slots=True)
class Location:
    """One place the cron file may be: ``kind`` ``s3`` (``bucket``, ``key``) or ``file``."""

    text: str  # as written
    kind: Literal["s3", "file"]
    path: str = ""
    bucket: str = ""
    key: str = ""

    def __str__(self) -> str:
        return self.text


def _location(text: str) -> Location:
    if text.startswith("s3://"):
        bucket, _, key = text[len("s3://") :].partition("/")
        if not bucket or not key:
            raise CronFileError(
                f"Cron file location {text!r} is malformed: write s3://<bucket>/<key>"
            )
        if not _BUCKET.fullmatch(bucket) or ".." in bucket:
            raise CronFileError(
                f"Cron file location {text!r} is malformed: {bucket!r} is not an S3 bucket name"
            )
        return Location(text, "s3", bucket=bucket, key=key)
    if text.startswith("file://"):
        path = text[len("file://") :]
        if not path.startswith("/"):
            raise CronFileError(
                f"Cron file location {text!r} is malformed: write file:///absolute/path or "
                "file:relative/path"
            )
        return Location(text, "file", path=path)
    if text.startswith("file:"):
        path = text[len("file:") :]
        if not path:
            raise CronFileError(f"Cron file location {text!r} names no file")
        return Location(text, "file", path=path)
    scheme = _SCHEME.match(text)
    if scheme is not None:
        hint = (
            " (the file packaged with the function is file:cron.yaml)"
            if scheme.group(1).lower() == "classpath"
            else ""
        )
        raise CronFileError(
            f"Cron file location {text!r} is not supported: use s3://<bucket>/<key> or "
            f"file:<path>{hint}"
        )
    return Location(text, "file", path=text)


def parse_locations(locations: str) -> tuple[Location, ...]:
    """The locations of a ``CRON_FILE`` value, in order; a malformed one raises CronFileError."""
    found = tuple(_location(item.strip()) for item in locations.split(",") if item.strip())
    if not found:
        raise CronFileError(f"Cron file locations {locations!r} name no location")
    return found


def default_locations(environ: Mapping[str, str] | None = None) -> str:
    """``CRON_FILE``, or the file packaged with the function when it is unset or empty."""
    env = os.environ if environ is None else environ
    configured = env.get("CRON_FILE", "").strip()
    if configured:
        return configured
    root = env.get("LAMBDA_TASK_ROOT", "").strip()
    return "file:" + (str(Path(root) / DEFAULT_FILE_NAME) if root else DEFAULT_FILE_NAME)


@dataclass(frozen=True, slots=True)
class _Read:
    """What a location held when it was last read: its version stamp and the outcome."""

    stamp: object  # an ETag, or a local file's (mtime, ctime, size, inode)
    result: CronFile | str  # the file, or a whole-file error's message


class CronFileSource:
    """The cron file from the first of ``locations`` that exists, cached between calls.

    Build it once per container; :meth:`load` on every tick. The S3 client is made on first
    use (never at import), unless one is injected.
    """

    def __init__(
        self,
        locations: str,
        *,
        s3_client: S3Client | None = None,
        default_timezone: str = DEFAULT_TIMEZONE,
        targets: TargetRules | None = None,
    ) -> None:
        self.locations = parse_locations(locations)
        self.default_timezone = default_timezone
        self.targets = targets  # the kinds of target this deployment may start
        self._s3 = s3_client
        self._cache: dict[Location, _Read] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, *, s3_client: S3Client | None = None
    ) -> CronFileSource:
        """From ``CRON_FILE`` and ``DEFAULT_TIMEZONE`` (or their defaults)."""
        env = os.environ if environ is None else environ
        zone = env.get("DEFAULT_TIMEZONE", "").strip() or DEFAULT_TIMEZONE
        return cls(default_locations(env), s3_client=s3_client, default_timezone=zone)

    def __repr__(self) -> str:
        return f"CronFileSource({self.text!r})"

    @property
    def text(self) -> str:
        return ", ".join(location.text for location in self.locations)

    @property
    def s3(self) -> S3Client:
        if self._s3 is None:
            import boto3
            from botocore.config import Config

            self._s3 = boto3.client(
                "s3",
                config=Config(connect_timeout=5, read_timeout=10, retries={"mode": "standard"}),
            )
        return self._s3

    def load(self) -> CronFile:
        """The cron file from the first location that exists (the cached one when unchanged);
        CronFileError when none exists, or when the one found cannot be read as a whole."""
        with self._lock:
            for location in self.locations:
                if location.kind == "s3":
                    read = self._read_s3(location)
                else:
                    read = self._read_file(location)
                if read is None:
                    self._cache.pop(location, None)
                    continue
                self._cache[location] = read
                if isinstance(read.result, str):
                    raise CronFileError(read.result)
                return read.result
        raise CronFileError(f"Scheduler configuration not found in [{self.text}]")

    def _parse(self, raw: bytes, location: Location) -> CronFile | str:
        try:
            return load(
                raw,
                source=location.text,
                default_timezone=self.default_timezone,
                targets=self.targets,
            )
        except CronFileError as exc:
            return str(exc)

    def _read_s3(self, location: Location) -> _Read | None:
        from botocore.exceptions import BotoCoreError, ClientError

        cached = self._cache.get(location)
        request: dict[str, Any] = {"Bucket": location.bucket, "Key": location.key}
        if cached is not None:
            request["IfNoneMatch"] = cached.stamp
        try:
            answer = self.s3.get_object(**request)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if cached is not None and (code in _NOT_MODIFIED_CODES or status == 304):
                return cached
            if code in _MISSING_CODES or status == 404:
                return None
            message = error.get("Message") or str(exc)
            raise CronFileUnreadableError(
                f"Cron file {location.text} cannot be read: {code or status} {message}"
            ) from exc
        except BotoCoreError as exc:
            raise CronFileUnreadableError(
                f"Cron file {location.text} cannot be read: {exc}"
            ) from exc
        body = answer["Body"]
        try:
            size = answer.get("ContentLength", 0)
            raw = b"" if size > MAX_FILE_BYTES else body.read(MAX_FILE_BYTES + 1)
        finally:
            body.close()
        if size > MAX_FILE_BYTES or len(raw) > MAX_FILE_BYTES:
            result: CronFile | str = (
                f"Cron file {location.text} is {max(size, len(raw))} bytes, more than the "
                f"{MAX_FILE_BYTES} allowed"
            )
        else:
            result = self._parse(raw, location)
        return _Read(answer.get("ETag", ""), result)

    def _read_file(self, location: Location) -> _Read | None:
        path = Path(location.path)
        try:
            info = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise CronFileUnreadableError(
                f"Cron file {location.text} cannot be read: {exc.strerror or exc}"
            ) from exc
        if path.is_dir():
            raise CronFileError(f"Cron file {location.text} is a directory, not a file")
        stamp = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
        cached = self._cache.get(location)
        if cached is not None and cached.stamp == stamp:
            return cached
        if info.st_size > MAX_FILE_BYTES:
            return _Read(
                stamp,
                f"Cron file {location.text} is {info.st_size} bytes, more than the "
                f"{MAX_FILE_BYTES} allowed",
            )
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CronFileUnreadableError(
                f"Cron file {location.text} cannot be read: {exc.strerror or exc}"
            ) from exc
        if len(raw) > MAX_FILE_BYTES:
            return _Read(
                stamp,
                f"Cron file {location.text} is larger than the {MAX_FILE_BYTES} bytes allowed",
            )
        return _Read(stamp, self._parse(raw, location))
