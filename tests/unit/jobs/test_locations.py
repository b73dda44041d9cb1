"""Where the cron file comes from: file:, bare paths, s3:// (moto), first found wins, and a warm
container that re-reads only a changed file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from mini_scheduler.errors import CronFileError
from mini_scheduler.jobs import MAX_FILE_BYTES
from mini_scheduler.jobs.locations import (
    CronFileSource,
    Location,
    default_locations,
    parse_locations,
)
from tests.unit.jobs.helpers import BASE, document

BUCKET = "mini-scheduler-test-config"
ONE = document(BASE)
TWO = document(BASE, {**BASE, "name": "second"})


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        yield


class Counted:
    """An S3 client that counts its GetObject and HeadObject calls."""

    def __init__(self) -> None:
        self.client = boto3.client("s3", region_name="us-east-1")
        self.client.create_bucket(Bucket=BUCKET)
        self.calls: list[str] = []
        self.client.meta.events.register("before-call.s3.*", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)

    def put(self, key: str, body: str | bytes) -> None:
        self.client.put_object(Bucket=BUCKET, Key=key, Body=body)
        self.calls.clear()

    @property
    def reads(self) -> list[str]:
        return [call for call in self.calls if call in ("GetObject", "HeadObject")]


@pytest.fixture
def s3(aws: None) -> Counted:
    return Counted()


# -- parsing ----------------------------------------------------------------------------------


def test_parse_locations() -> None:
    assert parse_locations(" s3://bucket-1/cfg/cron.yaml , file:/tmp/cron.yaml,cron.yaml,") == (
        Location("s3://bucket-1/cfg/cron.yaml", "s3", bucket="bucket-1", key="cfg/cron.yaml"),
        Location("file:/tmp/cron.yaml", "file", path="/tmp/cron.yaml"),
        Location("cron.yaml", "file", path="cron.yaml"),
    )
    assert parse_locations("file:///etc/cron.yaml")[0].path == "/etc/cron.yaml"
    assert parse_locations("file:rel/cron.yaml")[0].path == "rel/cron.yaml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("s3://", "Cron file location 's3://' is malformed: write s3://<bucket>/<key>"),
        (
            "s3://bucket-1",
            "Cron file location 's3://bucket-1' is malformed: write s3://<bucket>/<key>",
        ),
        (
            "s3://bucket-1/",
            "Cron file location 's3://bucket-1/' is malformed: write s3://<bucket>/<key>",
        ),
        (
            "s3://Bad_Bucket/k",
            "Cron file location 's3://Bad_Bucket/k' is malformed: "
            "'Bad_Bucket' is not an S3 bucket name",
        ),
        (
            "file://host/x",
            "Cron file location 'file://host/x' is malformed: write "
            "file:///absolute/path or file:relative/path",
        ),
        ("file:", "Cron file location 'file:' names no file"),
        (
            "https://example.com/cron.yaml",
            "Cron file location 'https://example.com/cron.yaml' is not supported: use "
            "s3://<bucket>/<key> or file:<path>",
        ),
        (
            "classpath:/cron.yaml",
            "Cron file location 'classpath:/cron.yaml' is not supported: use s3://<bucket>/<key> "
            "or file:<path> (the file packaged with the function is file:cron.yaml)",
        ),
        (" , ", "Cron file locations ' , ' name no location"),
    ],
)
def test_malformed_locations(text: str, message: str) -> None:
    with pytest.raises(CronFileError) as raised:
        CronFileSource(text)
    assert str(raised.value) == message


def test_default_locations() -> None:
    assert default_locations({}) == "file:cron.yaml"
    assert default_locations({"LAMBDA_TASK_ROOT": "/var/task"}) == "file:/var/task/cron.yaml"
    assert default_locations({"LAMBDA_TASK_ROOT": "/var/task", "CRON_FILE": "s3://b-1/k"}) == (
        "s3://b-1/k"
    )
    assert default_locations({"CRON_FILE": "  "}) == "file:cron.yaml"


def test_from_environment(tmp_path: Path) -> None:
    (tmp_path / "cron.yaml").write_text(ONE)
    source = CronFileSource.from_environment(
        {"LAMBDA_TASK_ROOT": str(tmp_path), "DEFAULT_TIMEZONE": "Europe/Paris"}
    )
    assert source.load().jobs[0].zone == "Europe/Paris"


# -- local files ------------------------------------------------------------------------------


def test_file_location(tmp_path: Path) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text(ONE)
    for text in (f"file:{path}", str(path), f"file://{path}"):
        cron_file = CronFileSource(text).load()
        assert cron_file.jobs[0].name == "report" and cron_file.source == text


def test_relative_bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cron.yaml").write_text(ONE)
    monkeypatch.chdir(tmp_path)
    assert CronFileSource("cron.yaml").load().jobs[0].name == "report"
    assert CronFileSource(default_locations({})).load().jobs[0].name == "report"


def test_local_file_is_reread_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text(ONE)
    source = CronFileSource(f"file:{path}")
    first = source.load()
    assert source.load() is first
    path.write_text(TWO)
    second = source.load()
    assert [job.name for job in second.jobs] == ["report", "second"]
    assert source.load() is second
    stat = path.stat()
    path.write_text(TWO.replace("report", "REPORT"))  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert source.load().jobs[0].name == "REPORT"


def test_missing_file_moves_on(tmp_path: Path) -> None:
    present = tmp_path / "b.yaml"
    present.write_text(ONE)
    source = CronFileSource(
        f"file:{tmp_path / 'a.yaml'}, file:{tmp_path / 'no' / 'dir.yaml'}, file:{present}"
    )
    assert source.load().source == f"file:{present}"


def test_first_found_wins(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(ONE)
    (tmp_path / "b.yaml").write_text(TWO)
    a, b = f"file:{tmp_path / 'a.yaml'}", f"file:{tmp_path / 'b.yaml'}"
    assert len(CronFileSource(f"{a},{b}").load().jobs) == 1
    assert len(CronFileSource(f"{b},{a}").load().jobs) == 2


def test_a_file_that_appears_later_takes_over(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(ONE)
    source = CronFileSource(f"file:{tmp_path / 'a.yaml'},file:{tmp_path / 'b.yaml'}")
    assert source.load().source.endswith("b.yaml")
    (tmp_path / "a.yaml").write_text(TWO)
    assert source.load().source.endswith("a.yaml")
    (tmp_path / "a.yaml").unlink()
    assert source.load().source.endswith("b.yaml")


def test_none_found(tmp_path: Path) -> None:
    text = f"file:{tmp_path / 'a.yaml'}, {tmp_path / 'b.yaml'}"
    with pytest.raises(CronFileError) as raised:
        CronFileSource(text).load()
    assert str(raised.value) == (
        f"Scheduler configuration not found in [file:{tmp_path / 'a.yaml'}, {tmp_path / 'b.yaml'}]"
    )


def test_a_broken_file_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("jobs: [")
    (tmp_path / "b.yaml").write_text(ONE)
    source = CronFileSource(f"file:{tmp_path / 'a.yaml'},file:{tmp_path / 'b.yaml'}")
    with pytest.raises(CronFileError, match=r"a\.yaml is not valid YAML"):
        source.load()
    with pytest.raises(CronFileError, match=r"a\.yaml is not valid YAML"):
        source.load()  # cached, still an error
    (tmp_path / "a.yaml").write_text(TWO)
    assert len(source.load().jobs) == 2


def test_a_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CronFileError) as raised:
        CronFileSource(f"file:{tmp_path}").load()
    assert str(raised.value) == f"Cron file file:{tmp_path} is a directory, not a file"


def test_unreadable_file_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text(ONE)

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(CronFileError) as raised:
        CronFileSource(f"{path}, {tmp_path / 'other.yaml'}").load()
    assert str(raised.value) == f"Cron file {path} cannot be read: Permission denied"


def test_local_file_too_large(tmp_path: Path) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text("jobs: []\n#" + "x" * MAX_FILE_BYTES)
    with pytest.raises(CronFileError, match="more than the 1048576 allowed"):
        CronFileSource(str(path)).load()


# -- S3 ---------------------------------------------------------------------------------------


def test_s3_found(s3: Counted) -> None:
    s3.put("cron.yaml", ONE)
    location = f"s3://{BUCKET}/cron.yaml"
    cron_file = CronFileSource(location, s3_client=s3.client).load()
    assert cron_file.source == location and cron_file.jobs[0].name == "report"
    assert s3.reads == ["GetObject"]


def test_s3_unchanged_costs_one_request_and_returns_the_cached_file(s3: Counted) -> None:
    s3.put("cron.yaml", ONE)
    source = CronFileSource(f"s3://{BUCKET}/cron.yaml", s3_client=s3.client)
    first = source.load()
    for _ in range(3):
        assert source.load() is first
    assert s3.reads == ["GetObject"] * 4


def test_s3_changed_is_reread(s3: Counted) -> None:
    s3.put("cron.yaml", ONE)
    source = CronFileSource(f"s3://{BUCKET}/cron.yaml", s3_client=s3.client)
    first = source.load()
    s3.put("cron.yaml", TWO)
    second = source.load()
    assert second is not first and len(second.jobs) == 2
    assert second.version != first.version
    assert source.load() is second
    assert s3.reads == ["GetObject", "GetObject"]


def test_s3_missing_key_or_bucket_moves_on(s3: Counted, tmp_path: Path) -> None:
    (tmp_path / "cron.yaml").write_text(ONE)
    source = CronFileSource(
        f"s3://{BUCKET}/missing.yaml, s3://no-such-bucket-here/cron.yaml, "
        f"file:{tmp_path / 'cron.yaml'}",
        s3_client=s3.client,
    )
    assert source.load().source == f"file:{tmp_path / 'cron.yaml'}"


def test_s3_first_found_wins(s3: Counted, tmp_path: Path) -> None:
    s3.put("cron.yaml", TWO)
    (tmp_path / "cron.yaml").write_text(ONE)
    s3_text, file_text = f"s3://{BUCKET}/cron.yaml", f"file:{tmp_path / 'cron.yaml'}"
    assert len(CronFileSource(f"{s3_text},{file_text}", s3_client=s3.client).load().jobs) == 2
    s3.calls.clear()
    assert len(CronFileSource(f"{file_text},{s3_text}", s3_client=s3.client).load().jobs) == 1
    assert s3.reads == []


def test_s3_object_deleted_falls_back(s3: Counted, tmp_path: Path) -> None:
    s3.put("cron.yaml", TWO)
    (tmp_path / "cron.yaml").write_text(ONE)
    source = CronFileSource(
        f"s3://{BUCKET}/cron.yaml,file:{tmp_path / 'cron.yaml'}", s3_client=s3.client
    )
    assert len(source.load().jobs) == 2
    s3.client.delete_object(Bucket=BUCKET, Key="cron.yaml")
    assert len(source.load().jobs) == 1
    s3.put("cron.yaml", TWO)
    assert len(source.load().jobs) == 2


def test_s3_none_found(s3: Counted) -> None:
    with pytest.raises(CronFileError) as raised:
        CronFileSource(f"s3://{BUCKET}/a.yaml,s3://{BUCKET}/b.yaml", s3_client=s3.client).load()
    assert str(raised.value) == (
        f"Scheduler configuration not found in [s3://{BUCKET}/a.yaml, s3://{BUCKET}/b.yaml]"
    )


def test_s3_broken_file_is_cached_as_an_error(s3: Counted) -> None:
    s3.put("cron.yaml", "jobs: {")
    source = CronFileSource(f"s3://{BUCKET}/cron.yaml", s3_client=s3.client)
    for _ in range(2):
        with pytest.raises(CronFileError, match=f"Cron file s3://{BUCKET}/cron.yaml is not valid"):
            source.load()
    assert s3.reads == ["GetObject", "GetObject"]
    s3.put("cron.yaml", ONE)
    assert source.load().ok


def test_s3_object_too_large(s3: Counted) -> None:
    s3.put("cron.yaml", b"jobs: []\n#" + b"x" * MAX_FILE_BYTES)
    with pytest.raises(CronFileError) as raised:
        CronFileSource(f"s3://{BUCKET}/cron.yaml", s3_client=s3.client).load()
    assert str(raised.value) == (
        f"Cron file s3://{BUCKET}/cron.yaml is {MAX_FILE_BYTES + 10} bytes, more than the "
        f"{MAX_FILE_BYTES} allowed"
    )


def test_s3_client_is_made_lazily(aws: None) -> None:
    source = CronFileSource(f"s3://{BUCKET}/cron.yaml")
    assert source._s3 is None
    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    client.put_object(Bucket=BUCKET, Key="cron.yaml", Body=ONE)
    assert source.load().jobs[0].name == "report"
    assert source._s3 is not None


@pytest.mark.parametrize(
    ("code", "status", "message"),
    [
        ("AccessDenied", 403, "Access Denied"),
        ("SlowDown", 503, "Please reduce your request rate."),
        ("InvalidObjectState", 403, "The operation is not valid for the object's storage class"),
    ],
)
def test_s3_other_errors_name_the_location(code: str, status: int, message: str) -> None:
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        stub.add_client_error(
            "get_object", service_error_code=code, service_message=message, http_status_code=status
        )
        with pytest.raises(CronFileError) as raised:
            CronFileSource(
                "s3://bucket-1/cron.yaml, file:/nonexistent/cron.yaml", s3_client=client
            ).load()
    assert (
        str(raised.value) == f"Cron file s3://bucket-1/cron.yaml cannot be read: {code} {message}"
    )


def test_s3_unreachable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.config import Config

    client = boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=1),
    )
    with pytest.raises(CronFileError, match=r"Cron file s3://bucket-1/cron.yaml cannot be read: "):
        CronFileSource("s3://bucket-1/cron.yaml", s3_client=client).load()
