"""The seams' protocols, read as the code declares them: what a fake of each must provide.

Members are read from the Protocol class itself (its methods and annotated attributes), so a
member added to a protocol is asked of every fake at once."""

from __future__ import annotations

from mini_scheduler.claims.base import ClaimStore
from mini_scheduler.dispatch.base import Dispatcher
from mini_scheduler.environment.base import EnvironmentStore

SEAMS: tuple[type, ...] = (ClaimStore, EnvironmentStore, Dispatcher)


def protocol_methods(protocol: type) -> frozenset[str]:
    """The public methods ``protocol`` declares (inherited from another protocol too)."""
    return frozenset(
        name
        for klass in protocol.__mro__
        if getattr(klass, "_is_protocol", False)
        for name, value in vars(klass).items()
        if not name.startswith("_") and callable(value)
    )


def protocol_attributes(protocol: type) -> frozenset[str]:
    """The public data members ``protocol`` declares (``name: str``)."""
    return frozenset(
        name
        for klass in protocol.__mro__
        if getattr(klass, "_is_protocol", False)
        for name in getattr(klass, "__annotations__", {})
        if not name.startswith("_")
    )


def protocol_members(protocol: type) -> frozenset[str]:
    return protocol_methods(protocol) | protocol_attributes(protocol)
