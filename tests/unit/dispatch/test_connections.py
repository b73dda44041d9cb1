"""Invoke answers give their connection back: a tick reuses a pool of connections to Lambda
instead of opening one per firing (on AWS, a TLS handshake of the ticker's CPU each).

botocore hands an ``Invoke`` payload over unread, and an unread answer keeps its connection out
of the pool. The stub Lambda of the benchmark counts the connections that carried an Invoke."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from benchmarks.stub_lambda import StubLambda

from mini_scheduler.aws import Clients
from mini_scheduler.config import Settings
from mini_scheduler.dispatch.lambda_ import LambdaDispatcher
from mini_scheduler.jobs import Target
from mini_scheduler.wiring import fanout

POOL = 4
FIRINGS = 120


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubLambda]:
    with StubLambda(latency=0.0) as stub:
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ENDPOINT_URL_LAMBDA": stub.endpoint,
        }.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        stub.reset()
        yield stub


def test_dispatches_reuse_the_client_s_connections(stub: StubLambda) -> None:
    clients = Clients("us-east-1", session=boto3.session.Session(), pool=POOL)
    dispatcher = LambdaDispatcher(clients("lambda"))
    target = Target("lambda", "mini-scheduler-sample-heartbeat")

    def dispatch(index: int) -> str:
        firing_id = f"job-{index}@2026-11-30T14:00:00Z"
        return dispatcher.dispatch(target, firing_id, {"firingId": firing_id})

    with ThreadPoolExecutor(POOL) as pool:
        answers = list(pool.map(dispatch, range(FIRINGS)))
    counts = stub.counts()
    assert len(answers) == FIRINGS and len(counts["firings"]) == FIRINGS
    assert counts["connections"] <= POOL, counts["connections"]


def test_shard_invokes_reuse_the_client_s_connections(stub: StubLambda) -> None:
    settings = Settings(state_table="unused", region="us-east-1", function_name="ticker")
    invoke = fanout(settings, Clients("us-east-1", session=boto3.session.Session(), pool=POOL))
    assert invoke is not None
    for shard in range(40):
        invoke({"tick": "2026-11-30T14:00:00Z", "shard": shard, "shards": 40})
    counts = stub.counts()
    assert len(counts["shards"]) == 40
    assert counts["connections"] == 1, counts["connections"]
