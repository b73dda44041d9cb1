"""The EnvironmentStore contract (environment/base.py), held against every backend."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mini_scheduler.errors import EnvironmentStoreError, StoreError
from tests.contract.environment.conftest import Stores

T0 = datetime(2026, 11, 30, 14, 0, tzinfo=UTC)


def test_get_answers_none_when_nothing_was_stored(environment: Stores) -> None:
    assert environment.store.get() is None


def test_a_value_set_is_the_value_got(environment: Stores) -> None:
    environment.store.set("DR", operator="jane.doe", now=T0)
    assert environment.store.get() == "DR"
    environment.store.set("prod", operator="jane.doe", now=T0)
    assert environment.store.get() == "prod"


def test_every_get_reads_the_store_afresh(environment: Stores) -> None:
    """No cache: a failover written elsewhere counts at the next read."""
    environment.store.set("prod", operator="jane.doe", now=T0)
    assert environment.store.get() == "prod"
    environment.peer.set("DR", operator="john.roe", now=T0)
    assert environment.store.get() == "DR"
    environment.peer.set("prod", operator="john.roe", now=T0)
    assert environment.store.get() == "prod"


def test_the_stored_text_is_answered_as_it_is(environment: Stores) -> None:
    """Validation (white space, case, names) is the active check's, not the store's."""
    environment.store.set(" Dr ", operator="jane.doe", now=T0)
    assert environment.store.get() == " Dr "


def test_a_store_that_cannot_be_reached_raises_environment_store_error(
    environment: Stores,
) -> None:
    with pytest.raises(EnvironmentStoreError) as read:
        environment.broken.get()
    with pytest.raises(EnvironmentStoreError):
        environment.broken.set("DR", operator="jane.doe", now=T0)
    assert isinstance(read.value, StoreError)


def test_stores_are_persistent_and_named_except_memory(environment: Stores) -> None:
    store = environment.store
    assert store.name
    assert store.persistent is (store.name != "memory")
