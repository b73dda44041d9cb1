"""Settings from environment variables: the template sets them, and so do tests and `make run`."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from mini_scheduler.errors import ConfigurationError

_ENVIRONMENT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
DEFAULT_PARAMETER = "/mini-scheduler/active-environment"
REGION_NAME = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")
"""An AWS region's name (us-east-1), as every option and variable naming one is checked."""
DEFAULT_KNOWN = ("prod", "DR")  # the names samconfig.toml gives the two stacks
TARGET_PREFIX_VARIABLES = {
    "sqs": "TARGET_QUEUE_PREFIX",
    "sns": "TARGET_TOPIC_PREFIX",
    "events": "TARGET_EVENT_BUS_PREFIX",
    "ecs": "TARGET_TASK_DEFINITION_PREFIX",
    "https": "TARGET_WEBHOOK_PREFIX",
}
"""The variable that carries each kind's prefix parameter (jobs.targets.KIND_PARAMETERS)."""


def valid_environment_name(value: str) -> bool:
    """One word of letters, digits, ``-`` and ``_`` (Mercury's rule)."""
    return bool(_ENVIRONMENT_NAME.fullmatch(value))


def environment_names(text: str, what: str) -> tuple[str, ...]:
    """A comma-separated list of environment names (``prod,DR``), each checked, duplicates
    (without regard to case) dropped; ConfigurationError naming ``what`` and the bad one."""
    names: list[str] = []
    for part in text.split(","):
        name = part.strip()
        if not name:
            continue
        if not valid_environment_name(name):
            raise ConfigurationError(
                f"{what}: {name[:100]!r} is not an environment name (one word of letters, "
                "digits, '-' and '_'); give them comma-separated, e.g. prod,DR"
            )
        if name.casefold() not in (n.casefold() for n in names):
            names.append(name)
    return tuple(names)


@dataclass(frozen=True, slots=True)
class Settings:
    state_table: str
    environment_name: str = "prod"
    # The environment names the deployment's stacks have (KNOWN_ENVIRONMENTS): the only values
    # the environment event accepts unforced; a tick reads any other as "nobody is active".
    # This region's own name is always known.
    known_environments: tuple[str, ...] = DEFAULT_KNOWN
    active_environment_store: str = f"ssm:{DEFAULT_PARAMETER}"
    claim_store: str = "dynamodb"
    cron_file: str | None = None
    default_timezone: str = "UTC"
    tick_lead_seconds: int = 0
    claim_lease_seconds: int = 120
    run_ttl_days: int = 30
    # A tick of FANOUT_THRESHOLD firings within 10 s of CPU at the template's 256 MB (make bench)
    fanout_threshold: int = 250
    fanout_shards: int = 40
    region: str = "us-east-1"
    function_name: str | None = None
    ticker_function: str | None = None  # the recorder's: whom to wake for a retry due soon
    # The tick is CPU-bound (~8 ms of CPU per firing in botocore): past 8-16 threads more only
    # add contention (make bench, "knee").
    dispatch_workers: int = 16
    # Claims and marks 25 to a request (PartiQL BatchExecuteStatement); False: one request each,
    # for an endpoint whose PartiQL ignores conditions (moto: the local run and its tests).
    batch_writes: bool = True
    # A runtime schedule moves on in one TransactWriteItems; False: in conditional steps, for a
    # table that takes no transaction (a global table in multi-Region strong consistency mode).
    transactions: bool = True
    # Where a final failure's "Job Run Failed" and a pause's "Job Paused" events go: a bus name
    # or ARN (EVENT_BUS_NAME; the template's FailureEventBus).
    event_bus: str = "default"
    # The peer regions whose stores follow this one's when it is active (PEER_STATE_TABLES:
    # ``us-west-2=TABLE``, or ``us-west-2`` alone for the table of the stack named STACK_NAME
    # there): the runtime schedules, pauses and waiting firings carried (mini_scheduler.carry).
    peers: tuple[tuple[str, str | None], ...] = ()
    stack_name: str | None = None
    # The CloudWatch Logs group of the audit trail (AUDIT_LOG_GROUP; the template's
    # AuditLogGroup): the operator actions an event asks of the ticker are recorded there.
    audit_log_group: str | None = None
    # For each kind of target besides Lambda and flows, the prefix the template's parameter
    # gives (TARGET_QUEUE_PREFIX, ...: an empty one turns the kind off); a kind missing is not
    # checked (outside Lambda). See mini_scheduler.jobs.targets.
    target_prefixes: tuple[tuple[str, str], ...] = ()

    @property
    def origin(self) -> str:
        """``<region>/<environment>``: who dispatched a firing."""
        return f"{self.region}/{self.environment_name}"

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        table = env.get("STATE_TABLE", "").strip()
        if not table:
            raise ConfigurationError("STATE_TABLE is not set: name the scheduler's state table")
        name = env.get("ENVIRONMENT_NAME", "prod").strip() or "prod"
        if not valid_environment_name(name):
            raise ConfigurationError(
                f"ENVIRONMENT_NAME {name!r} is not one word of letters, digits, '-' and '_'"
            )
        known = environment_names(env.get("KNOWN_ENVIRONMENTS", ""), "KNOWN_ENVIRONMENTS")
        store = env.get("ACTIVE_ENVIRONMENT_STORE", "").strip() or f"ssm:{DEFAULT_PARAMETER}"
        if not (store in ("dynamodb", "mongodb") or (store.startswith("ssm:") and len(store) > 4)):
            raise ConfigurationError(
                f"ACTIVE_ENVIRONMENT_STORE {store!r}: use ssm:<parameter name>, dynamodb or mongodb"
            )
        claims = env.get("CLAIM_STORE", "").strip() or "dynamodb"
        if claims not in ("dynamodb", "mongodb"):
            raise ConfigurationError(f"CLAIM_STORE {claims!r}: use dynamodb or mongodb")
        region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1").strip()
        peers = peer_tables(env.get("PEER_STATE_TABLES", ""), region)
        return cls(
            state_table=table,
            environment_name=name,
            known_environments=known or DEFAULT_KNOWN,
            active_environment_store=store,
            claim_store=claims,
            cron_file=env.get("CRON_FILE", "").strip() or None,
            default_timezone=env.get("DEFAULT_TIMEZONE", "").strip() or "UTC",
            tick_lead_seconds=_int(env, "TICK_LEAD_SECONDS", 0, 0, 60),
            claim_lease_seconds=_int(env, "CLAIM_LEASE_SECONDS", 120, 10, 3600),
            run_ttl_days=_int(env, "RUN_TTL_DAYS", 30, 1, 3650),
            fanout_threshold=_int(env, "FANOUT_THRESHOLD", 250, 1, 1_000_000),
            fanout_shards=_int(env, "FANOUT_SHARDS", 40, 1, 256),
            region=region,
            function_name=env.get("AWS_LAMBDA_FUNCTION_NAME") or None,
            ticker_function=env.get("TICKER_FUNCTION", "").strip() or None,
            dispatch_workers=_int(env, "DISPATCH_WORKERS", 16, 1, 512),
            batch_writes=flag(env, "STATE_TABLE_BATCH_WRITES", default=True),
            transactions=flag(env, "STATE_TABLE_TRANSACTIONS", default=True),
            event_bus=_event_bus(env),
            peers=peers,
            stack_name=env.get("STACK_NAME", "").strip() or None,
            audit_log_group=env.get("AUDIT_LOG_GROUP", "").strip() or None,
            target_prefixes=tuple(
                (kind, env[variable].strip())
                for kind, variable in TARGET_PREFIX_VARIABLES.items()
                if variable in env
            ),
        )


_TABLE = re.compile(r"[A-Za-z0-9_.-]{3,255}")


def peer_tables(text: str, region: str) -> tuple[tuple[str, str | None], ...]:
    """``PEER_STATE_TABLES``: ``REGION[=TABLE]`` comma-separated, this region left out;
    ConfigurationError naming the bad entry."""
    peers: dict[str, str | None] = {}
    for part in text.split(","):
        entry = part.strip()
        if not entry:
            continue
        name, _, table = (p.strip() for p in entry.partition("="))
        if not REGION_NAME.fullmatch(name) or (table and not _TABLE.fullmatch(table)):
            raise ConfigurationError(
                f"PEER_STATE_TABLES: {entry[:300]!r} is not REGION or REGION=TABLE "
                "(e.g. us-west-2, or us-west-2=mini-scheduler-StateTable-ABC)"
            )
        if name != region:
            peers[name] = table or None
    return tuple(peers.items())


_BUS = re.compile(r"(arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus/)?[A-Za-z0-9._/-]{1,256}")


def _event_bus(env: Mapping[str, str]) -> str:
    bus = env.get("EVENT_BUS_NAME", "").strip() or "default"
    if not _BUS.fullmatch(bus):
        raise ConfigurationError(
            f"EVENT_BUS_NAME {bus[:300]!r}: name an EventBridge event bus (or give its ARN)"
        )
    return bus


def flag(env: Mapping[str, str], key: str, *, default: bool) -> bool:
    """``key`` of ``env`` as true or false (``default`` when unset)."""
    raw = env.get(key, "").strip().lower()
    if not raw:
        return default
    if raw in ("true", "false"):
        return raw == "true"
    raise ConfigurationError(f"{key} must be true or false, got {raw!r}")


def _int(env: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{key} must be a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigurationError(f"{key} must be between {low} and {high}, got {value}")
    return value
