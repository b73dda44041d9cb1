"""Shared fixtures and helpers for the whole suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

pytest_plugins = ["tests.emulators.dynamodb_local"]

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ROOT / "events"


def load_event(name: str) -> dict[str, Any]:
    """One of the sample events in events/, as the functions receive it."""
    with (EVENTS / name).open(encoding="utf-8") as handle:
        event: dict[str, Any] = json.load(handle)
    return event
