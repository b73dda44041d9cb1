"""The benchmarks' request units, scale on paper and issue 28's summary, on made-up bookings
(``make bench`` books real ones; ``test_benchmarks.py`` runs it all at a tiny size)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from benchmarks import accounting, cost, defaults, scale, targets
from benchmarks.budget import Capacity
from benchmarks.ledger import Entry, Ledger, _read_key, _statement_key, _writes, family, job_of
from benchmarks.table import Row

TABLE = "bench-t"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def test_the_key_of_every_kind_of_write_is_found() -> None:
    run, watch = {"pk": _s("RUN#a"), "sk": _s("t1")}, {"pk": _s("WATCH"), "sk": _s("x")}
    assert list(_writes("PutItem", {"TableName": TABLE, "Item": {**run, "n": _s("1")}}, TABLE)) == [
        ("RUN#a", "t1")
    ]
    assert list(_writes("UpdateItem", {"TableName": "other", "Key": run}, TABLE)) == []
    batch = {
        "RequestItems": {TABLE: [{"PutRequest": {"Item": watch}}, {"DeleteRequest": {"Key": run}}]}
    }
    assert list(_writes("BatchWriteItem", batch, TABLE)) == [("WATCH", "x"), ("RUN#a", "t1")]
    insert = {
        "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'status': ?, 'pk': ?, 'sk': ?}}",
        "Parameters": [_s("CLAIMED"), _s("RUN#a"), _s("t1")],
    }
    update = {
        "Statement": f'UPDATE "{TABLE}" SET "status" = ? REMOVE "token" '
        'WHERE "pk" = ? AND "sk" = ?',
        "Parameters": [_s("DISPATCHED"), _s("RUN#b"), _s("t2")],
    }
    assert _statement_key(insert) == ("RUN#a", "t1")
    statements = {"Statements": [insert, update]}
    assert list(_writes("BatchExecuteStatement", statements, TABLE)) == [
        ("RUN#a", "t1"),
        ("RUN#b", "t2"),
    ]
    transact = {"TransactItems": [{"Update": {"TableName": TABLE, "Key": run}}]}
    assert list(_writes("TransactWriteItems", transact, TABLE)) == [("RUN#a", "t1")]


def test_a_querys_partition_is_read_through_its_names() -> None:
    query = {
        "KeyConditionExpression": "#pk = :watch AND #sk <= :now",
        "ExpressionAttributeNames": {"#pk": "pk", "#sk": "sk"},
        "ExpressionAttributeValues": {":watch": _s("WATCH"), ":now": _s("2026")},
    }
    assert _read_key("Query", query) == ("WATCH", "")
    assert _read_key("GetItem", {"Key": {"pk": _s("CONTROL"), "sk": _s("ENV")}}) == (
        "CONTROL",
        "ENV",
    )


class _Admin:
    """A DynamoDB client that answers BatchGetItem from a dict the test changes."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def batch_get_item(self, RequestItems: Mapping[str, Any]) -> dict[str, Any]:
        keys = [(k["pk"]["S"], k["sk"]["S"]) for k in RequestItems[TABLE]["Keys"]]
        return {"Responses": {TABLE: [self.items[k] for k in keys if k in self.items]}}


class _Model:
    def __init__(self, name: str) -> None:
        self.name = name


def test_a_write_costs_the_larger_of_its_item_before_and_after() -> None:
    admin = _Admin()
    ledger = Ledger(cast(Any, admin), TABLE)
    ledger.on = True
    key = {"pk": _s("RUN#a"), "sk": _s("t1")}
    admin.items["RUN#a", "t1"] = {**key, "blob": _s("x" * 1500)}  # ~1.5 KB before
    context: dict[str, Any] = {}
    ledger._before(
        params={"TableName": TABLE, "Key": key}, model=_Model("UpdateItem"), context=context
    )
    admin.items["RUN#a", "t1"] = {**key, "blob": _s("x" * 100)}  # smaller after
    ledger._after(parsed={}, context=context)
    (entry,) = ledger.take()
    assert (entry.pk, entry.write, entry.units) == ("RUN#a", True, 2)
    context = {}
    query = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": _s("CONTROL")},
    }
    ledger._before(params=query, model=_Model("Query"), context=context)
    ledger._after(parsed={"Items": [key] * 3}, context=context)
    (read,) = ledger.take()
    assert (read.pk, read.write, read.units, read.items) == ("CONTROL", False, 0.5, 3)


def test_a_partition_is_a_jobs_or_the_stacks() -> None:
    jobs = {"report", "heartbeat"}
    assert job_of("RUN#report", jobs) == "report" and job_of("WATCH", jobs) is None
    assert family("JOB#heartbeat", jobs) == "JOB#<job>"
    assert family("CONTROL", jobs) == "CONTROL"
    assert family("BATCH#2026-11-30T14:00", jobs) == "BATCH#…"


def _entry(pk: str, operation: str, units: float, *, write: bool = True, **more: Any) -> Entry:
    return Entry(operation, pk, more.pop("sk", "s"), write, units, more.pop("size", 100), **more)


def _accounting(
    book: list[Entry], empty: list[Entry], fanned: accounting.Fanned | None = None
) -> accounting.Accounting:
    sizes = accounting.Sizes(200, 260, 290, 120, 80, 60, 60, 16.0)
    return accounting.Accounting(
        firings=4,
        skip_jobs=frozenset({"s"}),
        allow_jobs=frozenset({"a", "b", "c", "d"}),
        tick=cast(Any, None),
        sizes=sizes,
        book=tuple(book),
        empty=tuple(empty),
        recorder_calls={},
        recorder_wall=0.01,
        recorder_cpu=0.002,
        recorder_log_bytes=300.0,
        recorder_emf_bytes=200.0,
        fanned=fanned,
    )


def _steady_book() -> list[Entry]:
    book = [_entry(f"RUN#{job}", op, 1) for job in "abcds" for op in ("Claim", "Mark", "Close")]
    book += [_entry("JOB#s", "UpdateItem", 1), _entry("JOB#s", "UpdateItem", 1)]
    book += [_entry("WATCH", "PutItem", 1, listed=5), _entry("WATCH", "Delete", 1, listed=5)]
    book += [_entry("CONTROL", "UpdateItem", 1)]
    book += [_entry(f"RUN#{job}", "BatchGetItem", 0.5, write=False) for job in "abcds"]
    book += [_entry("CONTROL", "Query", 1, write=False, sk="", items=1)]
    return book


def test_a_firing_costs_its_jobs_partitions_and_a_share_of_the_stacks() -> None:
    acc = _accounting(_steady_book(), [_entry("CONTROL", "UpdateItem", 1)])
    assert acc.per_firing(write=True) == pytest.approx(3 + 3 / 5)  # claim, mark, close; 3 shared
    assert acc.per_firing(write=True, skip=True) == pytest.approx(5 + 3 / 5)  # and the slot
    assert acc.per_firing(write=False) == pytest.approx(0.5 + 1 / 5)
    assert acc.breakdown(write=True)["WATCH", "PutItem"] == pytest.approx(1 / 5)
    # the cost model: the watermark is the empty tick's, the watch item sized apart
    assert (acc.per_tick(write=True), acc.beyond_tick(write=True)) == (1, 3)
    assert (acc.listing(write=True), acc.listing(write=False)) == (2, 0)


def _fanned() -> accounting.Fanned:
    """Two shards of 5 firings; the parent sweeps the shards' two watch items."""
    shard = [
        _entry("WATCH", "PutItem", 1, listed=5, size=140),
        _entry("CONTROL", "UpdateItem", 1, sk="WATERMARK#1"),
        _entry("CONTROL", "Query", 1, write=False, sk="", items=2, size=120),
    ]
    parent = [
        _entry("WATCH", "Delete", 1, listed=5, size=140),
        _entry("WATCH", "Delete", 1, listed=5, size=140),
        _entry("WATCH", "Query", 1, write=False, sk="", listed=10, size=280, items=2),
    ]
    other = [
        dataclasses.replace(e, sk="WATERMARK#2") if e.write and not e.listed else e for e in shard
    ]
    return accounting.Fanned(2, 10, tuple(parent), (tuple(shard), tuple(other)), ())


def test_the_stacks_partitions_at_a_million_firings_a_minute() -> None:
    acc = _accounting(_steady_book(), [], _fanned())
    found = {p.family: p for p in scale.partitions(acc, count=100)}
    assert found["RUN#<job>"].per_job and found["RUN#<job>"].writes == 3
    assert found["JOB#<job>"].writes == 2  # the skip job's slot, taken and released
    # each of 100 shards lists 10,000 firings: 60 + 16 x 10,000 B, 157 WRU put and deleted
    size = 140 + 16 * 5 * (10_000 / 5 - 1)
    assert scale.largest_item(acc, 100) == (size, 1)
    watch = found["WATCH"]
    assert watch.writes * 60 == pytest.approx(2 * 100 * 157)
    assert watch.burst == pytest.approx(2 * 100 * 157)
    # a watermark a shard; each shard's Query reads the 100 of them (6 KB: 2 units)
    control = found["CONTROL"]
    assert control.writes * 60 == pytest.approx(100)
    assert control.reads * 60 == pytest.approx(100 * 2)


def test_the_shards_a_million_firings_a_minute_take() -> None:
    # 10 s of CPU at 2.5 ms a firing is 4,000 firings at one vCPU: 250 shards
    assert scale.shards(0.0025, 1769) == 250
    assert scale.shards(0.0025, 256) > 256 * 6


def test_target_rows_are_in_the_issues_order() -> None:
    row = Row("2 CPU", "long figure", "1 ms", "floor", "1.1x", "<= 1.2x", True)
    rows = targets.table(
        [
            targets.target("3", "c", row),
            None,
            targets.target("1", "a", row),
            targets.target("1", "b", row),
        ]
    )
    assert [r.figure for r in rows] == ["1 a", "1 b", "3 c"]
    assert {r.section for r in rows} == {targets.SECTION}
    checks = [row, dataclasses.replace(row, met=False), dataclasses.replace(row, met=None)]
    summary = targets.scale_row(checks)
    assert summary is not None and (summary.value, summary.met) == ("1 of 2 met", False)


def test_the_recorders_batch_is_read_from_its_sqs_source(tmp_path: Path) -> None:
    text = (
        "Parameters:\n  FanoutShards:\n    Type: Number\n    Default: 40\n    MaxValue: 256\n"
        "Resources:\n  RecorderFunction:\n    Type: AWS::Serverless::Function\n"
        "    Properties:\n      EventInvokeConfig:\n        DestinationConfig:\n"
        "          OnFailure:\n            Type: SQS\n      Events:\n"
        "        Ended:\n          Type: EventBridgeRule\n"
    )
    assert defaults.recorder_batch(text) == 1  # an SQS destination is no event source
    assert defaults.parameter_max(text, "FanoutShards") == 256
    queued = (
        text
        + "        Runs:\n          Type: SQS\n          Properties:\n            BatchSize: 25\n"
    )
    assert defaults.recorder_batch(queued) == 25
    assert defaults.recorder_batch(queued.replace("            BatchSize: 25\n", "")) == 10
    (tmp_path / "template.yaml").write_text(queued)
    assert defaults.read(tmp_path / "template.yaml").recorder_batch == 25


def test_a_recorder_batch_shares_its_invocation() -> None:
    one = cost.Inputs(
        memory_mb=256,
        wall_empty=0.05,
        wall_per_firing=0.01,
        cpu_empty=0.01,
        cpu_per_firing=0.005,
        parent_wall=0.3,
        parent_cpu=0.1,
        fanout_threshold=2000,
        shards=8,
        tick_requests=4,
        firing_requests=1.0,
        wru_per_firing=3.0,
        wru_per_tick=1.0,
        rru_per_tick=4.0,
        run_item_bytes=400,
        ticker_log_bytes_per_firing=100.0,
        tick_log_bytes=300.0,
        recorder_wall=0.01,
        recorder_cpu=0.002,
        recorder_log_bytes=150.0,
        platform_log_bytes=260,
        recorder_emf_bytes=200.0,
    )
    ten = dataclasses.replace(one, recorder_batch=10)
    assert one.log_bytes_per_firing == 100 + 150 + 200 + 260
    assert ten.log_bytes_per_firing == 100 + 150 + 20 + 26
    label = "10,000 jobs every minute, lead 0"
    a = {b.scenario.label: b for b in cost.bills(one)}[label]
    b = {b.scenario.label: b for b in cost.bills(ten)}[label]
    # The batch of 10 saves nine invocations in ten, and pays the completion queue's requests
    # (a SendMessage a run, and a tenth of a receive and of a delete): more than it saves.
    saved = 438e6 * 0.20 / 1e6 * 0.9
    queued = 438e6 * cost.queue_requests(10) * 0.40 / 1e6
    assert cost.queue_requests(1) == 0 and cost.queue_requests(10) == pytest.approx(1.2)
    assert a.recorder - b.recorder == pytest.approx(saved - queued)
    assert b.logs < a.logs and a.dynamodb == b.dynamodb
    assert scale.parent_cpu(Capacity(256, 250, 40, 0.003, 0.003, 250, 0.5, 10_000), 0.1, 167) == (
        pytest.approx(0.1 + 0.4 * 100)
    )


def test_the_parent_s_shard_invokes_are_taken_to_the_shards_not_to_the_jobs() -> None:
    """A parent of 10,000 jobs that invoked 40 shards at 2 ms an Invoke: 0.08 s of its CPU
    are those invokes, and a parent of a million jobs makes 167 of them, not 4,000."""
    measured = Capacity(256, 250, 40, 0.003, 0.003, 250, 0.5, 10_000, 40, 0.002)
    expansion = 0.5 - 0.1 - 40 * 0.002
    assert scale.parent_cpu(measured, 0.1, 167) == pytest.approx(
        0.1 + expansion * 100 + 167 * 0.002
    )


def test_a_kind_of_partition_with_an_item_each_is_judged_by_its_busiest_item() -> None:
    """``MARKS#<claim token>``: one item a claim batch, so more of them as the rate grows, each
    as busy as one batch makes it (written once, read by its runs' closes), never the stack's
    one partition taking every shard's."""
    book = _steady_book()
    book += [_entry("MARKS#t1", "BatchWriteItem", 2), _entry("MARKS#t2", "BatchWriteItem", 1)]
    book += [_entry("MARKS#t1", "BatchGetItem", 0.5, write=False) for _ in range(25)]
    acc = _accounting(book, [], _fanned())
    found = {p.family: p for p in scale.partitions(acc, count=100)}
    marks = found["MARKS#…"]
    assert marks.per_item and not marks.per_job
    assert (marks.writes, marks.reads, marks.burst) == (2, 12.5, 2)
    assert [p.family for p in scale.partitions(acc, count=100)].count("MARKS#…") == 1
