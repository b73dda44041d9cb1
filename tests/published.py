"""The events the scheduler publishes (events/published/): their JSON Schemas, their examples, and
a validator of the part of JSON Schema they use (no dependency: ``jsonschema`` is only here as
another tool's requirement).

:func:`problems` answers every way a detail breaks its schema, so a test shows them all at once;
:data:`KEYWORDS` is what the validator reads, and a schema using any other keyword fails
``test_schema`` rather than being half-checked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from tests.conftest import EVENTS

PUBLISHED: Final = EVENTS / "published"
KINDS: Final = {"Job Run Failed": "job-run-failed", "Job Paused": "job-paused"}
"""Each detail-type and the stem of its files: ``<stem>.schema.json``, ``<stem>.json``."""
KEYWORDS: Final = frozenset(
    {"type", "required", "additionalProperties", "properties", "const", "enum", "pattern"}
    | {"minimum", "$schema", "$id", "title", "description"}
)
_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "object": (dict,),
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
}


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def schema(detail_type: str) -> dict[str, Any]:
    """The JSON Schema of ``detail_type``'s detail."""
    return _load(PUBLISHED / f"{KINDS[detail_type]}.schema.json")


def example(detail_type: str) -> dict[str, Any]:
    """The example event of ``detail_type``, as EventBridge delivers it."""
    return _load(PUBLISHED / f"{KINDS[detail_type]}.json")


def problems(value: Any, rules: dict[str, Any], where: str = "detail") -> list[str]:
    """Every way ``value`` breaks ``rules`` (a schema of :data:`KEYWORDS`); [] when it keeps
    them."""
    found: list[str] = []
    kind = rules.get("type")
    if kind is not None:
        wanted = _TYPES[kind]
        is_bool = isinstance(value, bool)
        if not isinstance(value, wanted) or (is_bool and kind != "boolean"):
            return [f"{where}: {value!r} is not of type {kind}"]
    if "const" in rules and (value != rules["const"] or type(value) is not type(rules["const"])):
        found.append(f"{where}: {value!r} is not {rules['const']!r}")
    if "enum" in rules and value not in rules["enum"]:
        found.append(f"{where}: {value!r} is not one of {rules['enum']}")
    if "pattern" in rules and not (isinstance(value, str) and re.search(rules["pattern"], value)):
        found.append(f"{where}: {value!r} does not match {rules['pattern']}")
    if "minimum" in rules and value < rules["minimum"]:
        found.append(f"{where}: {value!r} is under {rules['minimum']}")
    if isinstance(value, dict):
        properties: dict[str, Any] = rules.get("properties", {})
        found.extend(
            f"{where}: {key} is missing" for key in rules.get("required", ()) if key not in value
        )
        for key, item in value.items():
            if key in properties:
                found.extend(problems(item, properties[key], f"{where}.{key}"))
            elif rules.get("additionalProperties") is False:
                found.append(f"{where}: {key} is not in the schema")
    return found


def assert_published(detail_type: str, detail: dict[str, Any]) -> None:
    """``detail`` is a ``detail_type`` detail its schema allows."""
    assert problems(detail, schema(detail_type)) == []
