"""AWS clients as every seam makes them: one retry policy, bounded timeouts, made on first use.

Clients honour ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>`` through boto3, which is how
tests and the local run reach emulators: there is no code path of their own. This module imports
nothing of the scheduler's, so any module may use it (the stores, ``mongo.py``, ``wiring.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config

# Adaptive retries with backoff: throttling and 5xx are retried by the SDK, bounded per call.
RETRIES: Any = {"mode": "adaptive", "total_max_attempts": 5}  # 5 attempts: 1 + 4 retries
UNVALIDATED = frozenset({"dynamodb", "lambda"})
"""Services whose requests botocore does not validate before sending: the claim store builds
every DynamoDB request itself, never from a user's text (what a user writes is validated when
the cron file loads), and DynamoDB refuses a malformed one all the same. Validating a batch of 25
statements cost a tenth of a tick's CPU (make bench). Likewise each dispatch's ``Invoke``: a
function name cron.yaml's reader checked, a fixed invocation type, a body the dispatcher
encoded; checking it again cost 25 to 40 us a firing (Lambda refuses a malformed one too)."""


def client_config(pool: int = 64, *, validate: bool = True) -> Config:
    """The configuration of every client: :data:`RETRIES`, a pool of ``pool`` connections, 3 s
    to connect and 10 s to read; botocore's checks of each request's parameters unless not
    ``validate`` (:data:`UNVALIDATED`)."""
    return Config(
        retries=RETRIES,
        max_pool_connections=pool,
        connect_timeout=3,
        read_timeout=10,
        tcp_keepalive=True,
        parameter_validation=validate,
    )


@dataclass
class Clients:
    """boto3 clients of one region, each made on first use (never at import)."""

    region: str
    session: boto3.session.Session | None = None
    pool: int = 64
    _made: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, service: str) -> Any:
        with self._lock:
            found = self._made.get(service)
            if found is None:
                session = self.session or boto3.session.Session()
                found = session.client(
                    service,
                    region_name=self.region,  # type: ignore[call-overload]
                    config=client_config(self.pool, validate=service not in UNVALIDATED),
                )
                self._made[service] = found
            return found


def endpoint_override(environ: Mapping[str, str], service: str) -> str | None:
    """The endpoint boto3 sends ``service``'s calls to instead of AWS's (an emulator's):
    ``AWS_ENDPOINT_URL_<SERVICE>``, else ``AWS_ENDPOINT_URL``; None when neither is set."""
    specific = f"AWS_ENDPOINT_URL_{service.upper().replace('-', '_').replace(' ', '_')}"
    for key in (specific, "AWS_ENDPOINT_URL"):
        value = environ.get(key, "").strip()
        if value:
            return value
    return None


def account_from_arn(arn: str | None) -> str | None:
    """The account of an ARN (a Lambda function's, from its context), or None."""
    parts = (arn or "").split(":")
    return parts[4] if len(parts) > 5 and parts[4].isdigit() else None


def partition(region: str) -> str:
    """The ARN partition of ``region``: ``aws``, ``aws-us-gov`` or ``aws-cn``."""
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws-cn" if region.startswith("cn-") else "aws"
