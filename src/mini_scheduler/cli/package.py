"""A stack's cron file where its ticker reads it: ``s3://`` locations from S3 in the stack's
region, ``file:`` locations from the ticker's deployment package (Lambda GetFunction, then a
download of the package, at most once), as :class:`PackagedCronFile`."""

from __future__ import annotations

import io
import zipfile
from typing import Any, Final, Protocol

from mini_scheduler.cli.context import CommandError, Context
from mini_scheduler.errors import CronFileError, describe_aws_error
from mini_scheduler.jobs import CronFile, load
from mini_scheduler.jobs.locations import CronFileSource, Location
from mini_scheduler.jobs.yaml import MAX_FILE_BYTES

_TASK_ROOT: Final = "/var/task/"  # LAMBDA_TASK_ROOT: where the package is unpacked


class Ticker(Protocol):
    """Where a stack's ticker is (a :class:`~mini_scheduler.cli.where.Where`)."""

    @property
    def region(self) -> str: ...

    @property
    def function(self) -> str | None: ...

    def need_function(self) -> str:
        """The ticker function's name; CommandError naming what to give when it is unknown."""
        ...


class PackageUnreadable(CommandError):
    """The ticker's package could not be fetched or read here; ``fix`` says what to do. The
    ticker reads its own copy, so this stops no job by itself."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


_REACH: Final = (
    "check that this machine reaches the package's download URL (HTTPS to S3: a proxy, a "
    "firewall?), then run the command again"
)


class TickerPackage:
    """The ticker's deployment package, downloaded on first use (GetFunction's presigned URL)."""

    def __init__(self, context: Context, where: Ticker) -> None:
        self.context = context
        self.where = where
        self._zip: zipfile.ZipFile | None = None

    @property
    def name(self) -> str:
        return f"the package of {self.where.function or 'the ticker'} in {self.where.region}"

    def read(self, member: str) -> bytes | None:
        """A file of the package (None: not in it), at most MAX_FILE_BYTES + 1 bytes."""
        archive = self._open()
        try:
            info = archive.getinfo(member)
        except KeyError:
            return None
        with archive.open(info) as handle:
            return handle.read(MAX_FILE_BYTES + 1)

    def _open(self) -> zipfile.ZipFile:
        if self._zip is not None:
            return self._zip
        from botocore.exceptions import BotoCoreError, ClientError

        function = self.where.need_function()
        client = self.context.clients(self.where.region)("lambda")
        try:
            answer = client.get_function(FunctionName=function)
        except (BotoCoreError, ClientError) as exc:
            raise PackageUnreadable(
                f"Lambda GetFunction {function} in {self.where.region} failed - "
                f"{describe_aws_error(exc)}: the cron file is in its package",
                f"allow your identity lambda:GetFunction on {function}, then run the command again",
            ) from exc
        url = str(answer.get("Code", {}).get("Location", ""))
        if not url:
            raise PackageUnreadable(
                f"Lambda GetFunction {function} gave no package to download",
                "deploy the stack again (make deploy)",
            )
        try:
            body = self.context.download(url)
        except (OSError, CommandError) as exc:
            raise PackageUnreadable(f"downloading {self.name} failed: {exc}", _REACH) from exc
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(body))
        except zipfile.BadZipFile as exc:
            raise PackageUnreadable(
                f"{self.name} is not a zip archive ({exc}): the download was cut short?", _REACH
            ) from exc
        return self._zip


class PackagedCronFile(CronFileSource):
    """A stack's cron file locations as its ticker reads them: S3 from the stack's region, and
    ``file:`` locations from the ticker's package (relative ones, and those under /var/task)."""

    def __init__(
        self, locations: str, *, s3_client: Any, default_timezone: str, package: TickerPackage
    ) -> None:
        super().__init__(locations, s3_client=s3_client, default_timezone=default_timezone)
        self._package = package

    def load(self) -> CronFile:
        for location in self.locations:
            if location.kind == "s3":
                read = self._read_s3(location)
                if read is None:
                    continue
                if isinstance(read.result, str):
                    raise CronFileError(read.result)
                return read.result
            found = self._read_packaged(location)
            if found is not None:
                return found
        raise CronFileError(f"Scheduler configuration not found in [{self.text}]")

    def _read_packaged(self, location: Location) -> CronFile | None:
        path = location.path
        if path.startswith(_TASK_ROOT):
            path = path[len(_TASK_ROOT) :]
        elif path.startswith("/"):
            raise CronFileError(
                f"Cron file {location.text} is outside the ticker's package (a layer?): the CLI "
                "cannot read it - give --cron-file"
            )
        member = path.removeprefix("./")
        raw = self._package.read(member)
        if raw is None:
            return None
        source = f"{location.text} ({self._package.name})"
        if len(raw) > MAX_FILE_BYTES:
            raise CronFileError(f"Cron file {source} is larger than {MAX_FILE_BYTES} bytes")
        return load(raw, source=source, default_timezone=self.default_timezone)
