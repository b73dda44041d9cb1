"""PEER_STATE_TABLES: the regions a region brings in step when it is active (carry/)."""

from __future__ import annotations

import pytest

from mini_scheduler.config import Settings
from mini_scheduler.errors import ConfigurationError


def _settings(peers: str, region: str = "us-east-1") -> Settings:
    return Settings.from_environment(
        {"STATE_TABLE": "mine", "AWS_REGION": region, "PEER_STATE_TABLES": peers}
    )


def test_peers_are_regions_with_or_without_their_table_this_one_left_out() -> None:
    settings = _settings(" us-west-2 , eu-west-1=theirs,us-east-1,us-west-2")
    assert settings.peers == (("us-west-2", None), ("eu-west-1", "theirs"))
    assert _settings("").peers == ()


@pytest.mark.parametrize(
    ("peers", "named"),
    [
        ("us-west", "'us-west' is not REGION or REGION=TABLE"),
        ("us-west-2=no spaces", "'us-west-2=no spaces'"),
    ],
)
def test_a_bad_peer_is_refused_by_name(peers: str, named: str) -> None:
    with pytest.raises(ConfigurationError, match="PEER_STATE_TABLES") as caught:
        _settings(peers)
    assert named in str(caught.value)
