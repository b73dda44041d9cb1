"""The benchmarks run at a tiny size: every code path, no timing assertion (``make bench`` prints
the figures for a person to judge)."""

from __future__ import annotations

import json
import shutil
import urllib.request

import boto3
import pytest
from benchmarks import __main__ as bench_main
from benchmarks import accounting, cost, expansion
from benchmarks.stub_lambda import StubLambda
from benchmarks.table import Row, render
from botocore.config import Config


def test_item_sizes_follow_dynamodbs_rules() -> None:
    assert accounting.item_size({"pk": {"S": "RUN#a"}}) == 2 + 5
    assert accounting.item_size({"n": {"N": "123"}}) == 1 + 3
    assert accounting.item_size({"n": {"N": "-1.50"}}) == 1 + 2
    assert accounting.item_size({"m": {"M": {"a": {"S": "x"}}}}) == 1 + 3 + (1 + 1 + 1)
    assert accounting.item_size({"b": {"BOOL": True}, "l": {"L": [{"S": "ab"}]}}) == 2 + 1 + 6
    assert [accounting.wru(size) for size in (0, 1024, 1025)] == [1, 1, 2]


def test_write_units_of_small_items() -> None:
    units = accounting.units(accounting.Sizes(300, 340, 330, 260, 250, 60))
    assert (units.claim, units.mark, units.close, units.tick_writes) == (2, 6, 3, 1)
    assert units.per_firing == 11


def _inputs(**changes: float) -> cost.Inputs:
    values: dict[str, float] = {
        "memory_mb": 256,
        "wall_empty": 0.05,
        "wall_per_firing": 0.01,
        "cpu_empty": 0.01,
        "cpu_per_firing": 0.005,
        "parent_wall": 0.3,
        "parent_cpu": 0.1,
        "fanout_threshold": 2000,
        "shards": 8,
        "tick_requests": 4,
        "firing_requests": 3.0,
        "wru_per_firing": 11,
        "wru_per_tick": 1,
        "rru_per_tick": 2.5,
        "run_item_bytes": 430,
        "ticker_log_bytes_per_firing": 700.0,
        "tick_log_bytes": 300.0,
        "recorder_wall": 0.03,
        "recorder_cpu": 0.002,
        "recorder_log_bytes": 800.0,
        "platform_log_bytes": 264,
    }
    values.update(changes)
    return cost.Inputs(**values)  # type: ignore[arg-type]


def test_the_cost_model_grows_with_the_work() -> None:
    bills = {
        (b.scenario.jobs, b.scenario.every_minute, b.scenario.lead): b
        for b in cost.bills(_inputs())
    }
    assert len(bills) == 8
    for jobs in (100, 10_000):
        for minute in (False, True):
            assert bills[jobs, minute, 60].total > bills[jobs, minute, 0].total
    assert bills[10_000, True, 0].invocations == cost.TICKS * 9  # fanned out to 8 shards
    assert bills[100, True, 0].invocations == cost.TICKS
    assert bills[100, False, 0].eventbridge == 0  # within EventBridge Scheduler's free tier
    assert bills[10_000, True, 0].eventbridge == pytest.approx((438e6 - 14e6) / 1e6)
    assert [r.section for r in cost.rows(_inputs())] == ["5 cost"] * 8


def test_the_table_lines_up() -> None:
    text = render([Row("a", "figure", "1 s", "2 s", "2.0x faster", "<= 5 s", True)])
    header, _, line = text.splitlines()
    assert header.index("value") == line.index("1 s")
    assert line.endswith("yes")


def test_expansion_at_a_tiny_size() -> None:
    result = expansion.measure(jobs=60, minutes=2)
    assert not result.mismatches
    assert [row.section for row in expansion.rows(result)] == ["1 expansion"] * 2


def test_the_stub_lambda_answers_202_and_counts_per_firing() -> None:
    with StubLambda(latency=0.0) as stub:
        client = boto3.session.Session().client(
            "lambda",
            region_name="us-east-1",
            endpoint_url=stub.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"total_max_attempts": 1}),
        )
        for firing in (
            "a@2026-11-30T14:00:00Z",
            "a@2026-11-30T14:00:00Z",
            "b@2026-11-30T14:00:00Z",
        ):
            answer = client.invoke(
                FunctionName="target",
                InvocationType="Event",
                Payload=json.dumps({"firingId": firing}).encode(),
            )
            assert answer["StatusCode"] == 202
        client.invoke(FunctionName="ticker", InvocationType="Event", Payload=b'{"shard": 1}')
        counts = stub.counts()
        assert counts["firings"] == {"a@2026-11-30T14:00:00Z": 2, "b@2026-11-30T14:00:00Z": 1}
        assert counts["functions"] == {"target": 3, "ticker": 1}
        assert len(counts["shards"]) == 1
        stub.reset()
        assert stub.counts()["firings"] == {}
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(stub.endpoint + "/nowhere", timeout=5)


@pytest.mark.dynamodb_local
@pytest.mark.skipif(shutil.which("java") is None, reason="DynamoDB Local needs Java")
def test_make_bench_runs_every_benchmark_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for section in ("1 expansion", "2 tick", "2 knee", "3 cold start", "4 requests", "5 cost"):
        assert section in out
    assert "all exactly once" in out
    assert "Cost model" in out
