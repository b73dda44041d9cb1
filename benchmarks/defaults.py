"""What a default stack deploys: the template's parameter defaults, else the code's.

The ticker's memory is template.yaml's ``TickerMemorySize`` default (else ``Globals``'
``MemorySize``), the recorder's is ``Globals``' ``MemorySize``; ``FANOUT_THRESHOLD`` and
``FANOUT_SHARDS`` are the ``FanoutThreshold`` and ``FanoutShards`` defaults, else
``mini_scheduler.config.Settings``' defaults, as is ``DISPATCH_WORKERS`` (the template does not
set it). The recorder writes Lambda's START, END and REPORT lines unless ``RecorderPlatformLogs``
is WARN (its default). The functions' architecture is ``Globals``' ``Architectures``, which
prices their time. ``FanoutShards``' ``MaxValue`` is the most shards a stack can have. The
recorder closes one run an invocation, unless an SQS event source feeds it: then as many as its
``BatchSize`` (SQS's default, 10, when it sets none). The template is read with regular
expressions: its CloudFormation tags (``!Ref``) are no YAML a safe loader reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mini_scheduler.config import Settings

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
_CODE = Settings(state_table="bench")


@dataclass(frozen=True)
class Defaults:
    memory_mb: int  # the ticker's MemorySize
    recorder_memory_mb: int
    fanout_threshold: int
    fanout_shards: int
    dispatch_workers: int
    recorder_platform_lines: bool = True  # Lambda's START, END and REPORT for each run
    architecture: str = "x86_64"  # Globals' Architectures: arm64 or x86_64
    fanout_shards_max: int | None = None  # FanoutShards' MaxValue
    recorder_batch: int = 1  # runs a recorder invocation closes: an SQS source's BatchSize


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def globals_memory(text: str, default: int = 256) -> int:
    """``Globals: Function: MemorySize`` in the template's text, or ``default``."""
    found = re.search(r"^Globals:.*?^\s+MemorySize:\s*(\d+)", text, re.S | re.M)
    return int(found.group(1)) if found else default


def globals_architecture(text: str, default: str = "x86_64") -> str:
    """``Globals: Function: Architectures`` in the template's text (its one entry), or
    ``default``, Lambda's."""
    found = re.search(r"^Globals:.*?^\s+Architectures:\s*\[\s*([\w-]+)\s*\]", text, re.S | re.M)
    return found.group(1) if found else default


def parameter_text(text: str, name: str) -> str | None:
    """The ``Default`` of the template parameter ``name`` (one word), or None."""
    section = re.search(r"^Parameters:\n(.*?)(?=^\S|\Z)", text, re.S | re.M)
    if section is None:
        return None
    found = re.search(
        rf"^  {re.escape(name)}:\n(?:    .*\n|\s*\n)*?    Default:\s*\"?([\w.-]+)\"?\s*$",
        section.group(1),
        re.M,
    )
    return found.group(1) if found else None


def parameter_max(text: str, name: str) -> int | None:
    """The ``MaxValue`` of the template parameter ``name``, or None."""
    section = re.search(r"^Parameters:\n(.*?)(?=^\S|\Z)", text, re.S | re.M)
    if section is None:
        return None
    found = re.search(
        rf"^  {re.escape(name)}:\n(?:    .*\n|\s*\n)*?    MaxValue:\s*(\d+)\s*$",
        section.group(1),
        re.M,
    )
    return int(found.group(1)) if found else None


SQS_BATCH = 10
"""An SQS event source mapping's BatchSize when the template sets none (Lambda's default)."""


def recorder_batch(text: str) -> int:
    """Runs one recorder invocation closes: the ``BatchSize`` of an SQS event source of the
    ``RecorderFunction`` resource (an ``Events`` entry of ``Type: SQS``, or an
    ``AWS::Lambda::EventSourceMapping`` whose ``FunctionName`` is it), else 1."""
    block = re.search(r"^  RecorderFunction:\n((?:    .*\n|\s*\n)*)", text, re.M)
    events = re.search(
        r"^      Events:\n((?:        .*\n|\s*\n)*)", block.group(1) if block else "", re.M
    )
    sources = re.split(r"^        (?=\w)", events.group(1), flags=re.M) if events else []
    mappings = re.findall(
        r"^  \w+:\n    Type: AWS::Lambda::EventSourceMapping\n((?:    .*\n|\s*\n)*)", text, re.M
    )
    for source in [s for s in sources if re.search(r"^\s+Type:\s*SQS\s*$", s, re.M)] + [
        m for m in mappings if re.search(r"FunctionName:.*RecorderFunction", m)
    ]:
        size = re.search(r"^\s+BatchSize:\s*(\d+)", source, re.M)
        return int(size.group(1)) if size else SQS_BATCH
    return 1


def parameter_default(text: str, name: str) -> int | None:
    """The numeric ``Default`` of the template parameter ``name``, or None."""
    value = parameter_text(text, name)
    return int(value) if value is not None and value.isdigit() else None


def read(path: Path = TEMPLATE) -> Defaults:
    text = _text(path)
    recorder = globals_memory(text)
    ticker = parameter_default(text, "TickerMemorySize")
    threshold = parameter_default(text, "FanoutThreshold")
    shards = parameter_default(text, "FanoutShards")
    return Defaults(
        memory_mb=ticker if ticker is not None else recorder,
        recorder_memory_mb=recorder,
        fanout_threshold=threshold if threshold is not None else _CODE.fanout_threshold,
        fanout_shards=shards if shards is not None else _CODE.fanout_shards,
        dispatch_workers=_CODE.dispatch_workers,
        recorder_platform_lines=parameter_text(text, "RecorderPlatformLogs") != "WARN",
        architecture=globals_architecture(text),
        fanout_shards_max=parameter_max(text, "FanoutShards"),
        recorder_batch=recorder_batch(text),
    )
