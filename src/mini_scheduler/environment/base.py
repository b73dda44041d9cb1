"""Where the name of the active environment is kept.

Contract: ``get`` answers the stored text (None when nothing was stored yet) and reads fresh
every time (no cache: a failover must take effect at the next tick); it raises
EnvironmentStoreError when the store cannot be read. ``set`` persists the value before it
returns, or raises EnvironmentStoreError and changes nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class EnvironmentStore(Protocol):
    name: str  # how the store is shown to operators, e.g. "ssm:/mini-scheduler/active-environment"
    persistent: bool

    def get(self) -> str | None: ...

    def set(self, value: str, *, operator: str, now: datetime) -> None: ...
