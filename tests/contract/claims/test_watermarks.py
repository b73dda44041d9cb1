"""The watermark part of the ClaimStore contract, held against every backend.

``control(scope)`` answers the scope's own watermark and every watermark of the store (the
region's and each shard's): the ticker's hand-over between unsharded and sharded ticks reads the
others (``Ticker._handled_until``), so a backend that answers only its own loses firings there.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.tick import Shard

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)
REGION = "us-east-1/prod"
SHARD_0 = REGION + Shard(0, 8).suffix
SHARD_5 = REGION + Shard(5, 8).suffix


def test_a_store_without_watermarks_lists_none(claim_store: ClaimStore) -> None:
    control = claim_store.control(REGION)
    assert control.watermark is None
    assert control.watermarks == {}


def test_control_lists_every_scope_s_watermark_whatever_scope_asks(
    claim_store: ClaimStore,
) -> None:
    claim_store.advance_watermark(REGION, T0)
    claim_store.advance_watermark(SHARD_0, T0 + timedelta(minutes=2))
    claim_store.advance_watermark(SHARD_5, T0 + timedelta(minutes=3))
    claim_store.advance_watermark("us-west-2/DR", T0 - timedelta(minutes=1))
    every = {
        REGION: T0,
        SHARD_0: T0 + timedelta(minutes=2),
        SHARD_5: T0 + timedelta(minutes=3),
        "us-west-2/DR": T0 - timedelta(minutes=1),
    }
    for scope in (REGION, SHARD_0, SHARD_5, REGION + Shard(1, 8).suffix):
        control = claim_store.control(scope)
        assert dict(control.watermarks) == every, scope
        assert control.watermark == every.get(scope), scope


def test_the_listed_watermarks_only_move_forward(claim_store: ClaimStore) -> None:
    claim_store.advance_watermark(SHARD_0, T0)
    claim_store.advance_watermark(SHARD_0, T0 - timedelta(minutes=5))
    assert claim_store.control(REGION).watermarks == {SHARD_0: T0}
    claim_store.advance_watermark(SHARD_0, T0 + timedelta(minutes=1))
    assert claim_store.control(REGION).watermarks == {SHARD_0: T0 + timedelta(minutes=1)}


def test_pauses_are_not_listed_as_watermarks(claim_store: ClaimStore) -> None:
    claim_store.set_paused("report", True, operator="jane.doe", now=T0)
    claim_store.advance_watermark(REGION, T0)
    control = claim_store.control(SHARD_0)
    assert control.watermarks == {REGION: T0}
    assert list(control.paused) == ["report"]
