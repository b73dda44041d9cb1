"""cron.yaml entries: what loads, and the exact text for each entry that is skipped."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pytest

from mini_scheduler.cron.zones import get_zone
from mini_scheduler.jobs import (
    DEFAULT_FLOW_TIMEOUT,
    DEFAULT_LAMBDA_TIMEOUT,
    CronFile,
    Problem,
    Target,
    load,
    parse_service,
)
from tests.unit.jobs.helpers import BASE, document, errors, invalid, one, warnings

SEED_000 = """
jobs:
  - name: "morning-report"
    description: "09:00 New York time, every day"
    cron: "0 0 9 * * ?"
    timezone: "America/New_York"
    service: "morning-report"
    resolver: "v1.state.resolver"
    parameters:
      region: "east"

  - name: "hourly-cleanup"
    description: "a flow, at a quarter past every hour"
    cron: "0 15 * * * ?"
    service: "flow://cleanup-flow"
    resolver: "v1.state.resolver"

deferred.start: true
leader.election: false
"""


def test_seed_000_file_loads_with_aws_targets() -> None:
    cron_file = load(SEED_000, source="cron.yaml")
    assert cron_file.ok and cron_file.problems == ()
    report, cleanup = cron_file.jobs
    assert report.name == "morning-report"
    assert report.statement == "0 0 9 * * ?"
    assert report.zone == "America/New_York" and report.tz is get_zone("America/New_York")
    assert report.target == Target("lambda", "morning-report")
    assert report.parameters == {"region": "east"}
    assert report.description == "09:00 New York time, every day"
    assert report.schedule == "0 0 9 * * ? @America/New_York"
    assert report.entry == 1
    assert cleanup.target == Target("flow", "cleanup-flow")
    assert cleanup.service == "flow://cleanup-flow"
    assert cleanup.zone == "UTC" and cleanup.schedule == "0 15 * * * ? @UTC"
    assert cleanup.entry == 2
    assert cron_file.deferred_start is True and cron_file.leader_election is False
    assert cron_file.source == "cron.yaml"
    assert cron_file.job("hourly-cleanup") is cleanup and cron_file.job("nope") is None
    assert cron_file.entries == 2 and cron_file.skipped == 0


def test_defaults() -> None:
    cron_file = load(document(BASE, {**BASE, "name": "flow", "service": "flow://f"}))
    job, flow = cron_file.jobs
    assert (job.misfire, job.overlap, job.enabled) == ("fire_now", "allow", True)
    assert job.timeout == DEFAULT_LAMBDA_TIMEOUT == 900
    assert flow.timeout == DEFAULT_FLOW_TIMEOUT == 3600
    assert job.parameters == {} and job.description is None
    assert job.zone == "UTC"
    assert (cron_file.deferred_start, cron_file.leader_election) == (False, False)
    assert (cron_file.misfire_grace, cron_file.misfire_max) == (3600, 100)


def test_version_is_the_sha256_of_the_raw_bytes() -> None:
    text = document(BASE)
    assert load(text).version == hashlib.sha256(text.encode()).hexdigest()
    assert load(text.encode()).version == load(text).version
    assert load(text + " ").version != load(text).version


def test_default_timezone_applies_to_jobs_without_one() -> None:
    cron_file = load(
        document(BASE, {**BASE, "name": "b", "timezone": "UTC"}), default_timezone="Europe/Paris"
    )
    assert [job.zone for job in cron_file.jobs] == ["Europe/Paris", "UTC"]


def test_optional_keys() -> None:
    job = one(
        misfire="fire_all",
        overlap="skip",
        timeout=60,
        enabled=False,
        description="d",
        resolver="v1.state.resolver",
    ).jobs[0]
    assert (job.misfire, job.overlap, job.timeout, job.enabled) == ("fire_all", "skip", 60, False)
    assert job.description == "d"


def test_null_optional_keys_mean_absent() -> None:
    cron_file = load(
        "jobs:\n  - name: a\n    cron: '0 0 9 * * ?'\n    service: fn\n    timezone:\n"
        "    parameters:\n    misfire:\n    overlap:\n    timeout:\n    enabled:\n"
        "    description:\n    resolver:\n"
    )
    job = cron_file.jobs[0]
    assert cron_file.ok
    assert (job.zone, job.parameters, job.misfire, job.overlap) == ("UTC", {}, "fire_now", "allow")
    assert (job.timeout, job.enabled, job.description) == (900, True, None)


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        pytest.param({"cron": None}, "missing cron", id="no-cron"),
        pytest.param({"service": None}, "missing service", id="no-service"),
        pytest.param({"cron": None, "service": None}, "missing cron and service", id="two"),
        pytest.param(
            {"cron": "0 61 * * * ?"},
            "Bad minute in '0 61 * * * ?': values are 0 to 59",
            id="cron-minute",
        ),
        pytest.param(
            {"cron": "0 0 9 * *"},
            "Bad field count in '0 0 9 * *': 5 fields; a statement has 6 or 7 - written for "
            "Unix cron? In Quartz it is '0 0 0 9 * ?'",
            id="cron-unix-fields",
        ),
        pytest.param(
            {"cron": "0 0 9 1W *"},
            "Bad field count in '0 0 9 1W *': 5 fields; a statement has 6 or 7",
            id="cron-fields",
        ),
        pytest.param(
            {"cron": "0 0 9 1 * ? 2030 x"},
            "Bad field count in '0 0 9 1 * ? 2030 x': 8 fields; a statement has 6 or 7",
            id="cron-eight-fields",
        ),
        pytest.param({"cron": 5}, "cron must be text, not 5: quote it", id="cron-number"),
        pytest.param(
            {"service": "morning.report"},
            "service 'morning.report' is a Mercury route name, not a Lambda function name (a dot "
            "is not allowed): name the Lambda function (or flow://state-machine) instead",
            id="service-route-name",
        ),
        pytest.param(
            {"service": "flow://cleanup.flow"},
            "service 'flow://cleanup.flow' does not name a Step Functions state machine: write "
            "flow://<name> (1 to 80 letters, digits, '-' or '_') or flow://<state machine ARN>",
            id="service-flow-dots",
        ),
        pytest.param(
            {"service": "flow://"},
            "service 'flow://' names no state machine: write flow://<state machine name>",
            id="service-flow-empty",
        ),
        pytest.param(
            {"service": "arn:aws:states:us-east-1:123456789012:stateMachine:clean"},
            "service 'arn:aws:states:us-east-1:123456789012:stateMachine:clean' is a Step "
            "Functions ARN: write it as flow://arn:aws:states:us-east-1:123456789012:"
            "stateMachine:clean",
            id="service-sfn-arn-without-flow",
        ),
        pytest.param(
            {"service": "my function"},
            "service 'my function' is not a Lambda function name (1 to 64 letters, digits, '-' "
            "or '_'), name:alias, name:version, or function ARN, nor one of flow://, sqs://, "
            "sns://, events://, ecs:// or https://",
            id="service-space",
        ),
        pytest.param(
            {"service": "f" * 65},
            f"service {'f' * 65!r} is longer than the 64 characters of a Lambda function name",
            id="service-long",
        ),
        pytest.param({"service": ""}, "service is empty", id="service-empty"),
        pytest.param({"service": ["fn"]}, "service must be text, not a list", id="service-list"),
        pytest.param(
            {"timezone": "America/NewYork"},
            "unknown time zone 'America/NewYork' - did you mean America/New_York?",
            id="zone-unknown",
        ),
        pytest.param(
            {"timezone": "../etc/passwd"}, "unknown time zone '../etc/passwd'", id="zone-path"
        ),
        pytest.param({"timezone": 5}, "timezone must be text, not 5", id="zone-number"),
        pytest.param(
            {"misfire": "now"},
            "misfire 'now' is not one of fire_now, fire_all and skip",
            id="misfire",
        ),
        pytest.param(
            {"overlap": "queue"},
            "overlap 'queue' is not one of allow, skip, buffer_one, buffer_all and cancel_other",
            id="overlap",
        ),
        pytest.param(
            {"overlap": False},
            "overlap false is not one of allow, skip, buffer_one, buffer_all and cancel_other",
            id="overlap-yaml-no",
        ),
        pytest.param(
            {"timeout": 0},
            "timeout must be a whole number of seconds from 1 to 604800, not 0",
            id="timeout-zero",
        ),
        pytest.param(
            {"timeout": 604801},
            "timeout must be a whole number of seconds from 1 to 604800, not 604801",
            id="timeout-week",
        ),
        pytest.param(
            {"timeout": "60"},
            "timeout must be a whole number of seconds from 1 to 604800, not '60'",
            id="timeout-text",
        ),
        pytest.param(
            {"timeout": True},
            "timeout must be a whole number of seconds from 1 to 604800, not true",
            id="timeout-bool",
        ),
        pytest.param(
            {"timeout": 1.5},
            "timeout must be a whole number of seconds from 1 to 604800, not 1.5",
            id="timeout-float",
        ),
        pytest.param(
            {"enabled": "yes"}, "enabled must be true or false, not 'yes'", id="enabled-text"
        ),
        pytest.param(
            {"parameters": ["a"]},
            "parameters must be a mapping of keys to values, not a list",
            id="parameters-list",
        ),
        pytest.param(
            {"parameters": "token=s3cret"},
            "parameters must be a mapping of keys to values, not text",
            id="parameters-text",
        ),
        pytest.param({"description": 5}, "description must be text, not 5", id="description"),
    ],
)
def test_invalid_entry(overrides: dict[str, Any], reason: str) -> None:
    cron_file = one(**overrides)
    assert cron_file.jobs == ()
    assert errors(cron_file) == [invalid(reason)]
    assert not cron_file.ok
    assert cron_file.problems[-1] == Problem("error", invalid(reason), 1)


@pytest.mark.parametrize(
    ("name", "shown", "reason"),
    [
        pytest.param(None, None, "missing name", id="no-name"),
        pytest.param(
            "a b", None, "name 'a b' may hold only letters, digits, '.', '_' and '-'", id="space"
        ),
        pytest.param(
            "rapport-é",
            None,
            "name 'rapport-é' may hold only letters, digits, '.', '_' and '-'",
            id="non-ascii",
        ),
        pytest.param(
            "-report",
            "-report",
            "name '-report' must not start or end with '.', '_' or '-'",
            id="start",
        ),
        pytest.param(
            "report.",
            "report.",
            "name 'report.' must not start or end with '.', '_' or '-'",
            id="end",
        ),
        pytest.param(
            "_report",
            "_report",
            "name '_report' must not start or end with '.', '_' or '-'",
            id="underscore",
        ),
        pytest.param("a..b", "a..b", "name 'a..b' must not hold '..'", id="dots"),
        pytest.param(
            "a" * 65, None, f"name {'a' * 20!r}... is longer than 64 characters", id="long"
        ),
        pytest.param("", None, "name is empty", id="empty"),
        pytest.param(123, None, "name must be text, not 123: quote it", id="number"),
        pytest.param(
            "x\nERROR forged",
            None,
            "name 'x\\nERROR forged' may hold only letters, digits, '.', '_' and '-'",
            id="line-break",
        ),
        pytest.param(
            "a b" * 100_000,
            None,
            f"name {('a b' * 22)[:64]!r}... may hold only letters, digits, '.', '_' and '-'",
            id="huge",
        ),
    ],
)
def test_invalid_name(name: object, shown: str | None, reason: str) -> None:
    """The error names the entry only by a name that is one (bounded, the characters of a
    name); any other is quoted and cut in the reason, never copied into the line as it is."""
    cron_file = one(name=name)
    assert errors(cron_file) == [invalid(reason, name=shown)]


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("42", id="number"),
        pytest.param("just text", id="text"),
        pytest.param("[a, b]", id="list"),
        pytest.param("", id="null"),
    ],
)
def test_entry_that_is_not_a_mapping(raw: str) -> None:
    cron_file = load(f"jobs:\n  - {raw}\n  - {{name: ok, cron: '0 0 9 * * ?', service: fn}}\n")
    shown = {"42": "42", "just text": "'just text'", "[a, b]": "a list", "": "null"}[raw]
    assert errors(cron_file) == [
        invalid(f"the entry is {shown}, not a mapping of job keys", name=None)
    ]
    assert [job.name for job in cron_file.jobs] == ["ok"]
    assert cron_file.jobs[0].entry == 2


def test_non_text_parameter_keys() -> None:
    cron_file = load(
        "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, "
        "parameters: {1: one, nested: {2: two}}}\n"
    )
    assert errors(cron_file) == [
        invalid(
            "parameter key 1 is not text: quote it; "
            "parameter nested has a key 2 that is not text: quote it",
            name="a",
        )
    ]
    cron_file = load(
        "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, parameters: {nested: {2: two}}}\n"
    )
    assert errors(cron_file) == [
        invalid("parameter nested has a key 2 that is not text: quote it", name="a")
    ]


def test_every_reason_of_an_entry_is_listed() -> None:
    cron_file = one(
        name="-x", cron="0 61 * * * ?", service="a.b", timezone="Mars/Base", misfire="later"
    )
    assert errors(cron_file) == [
        invalid(
            "name '-x' must not start or end with '.', '_' or '-'; "
            "Bad minute in '0 61 * * * ?': values are 0 to 59; "
            "service 'a.b' is a Mercury route name, not a Lambda function name (a dot is not "
            "allowed): name the Lambda function (or flow://state-machine) instead; "
            "unknown time zone 'Mars/Base'; "
            "misfire 'later' is not one of fire_now, fire_all and skip",
            name="-x",
        )
    ]


@pytest.mark.parametrize(
    ("service", "target"),
    [
        ("report-fn", Target("lambda", "report-fn")),
        ("Report_Fn2", Target("lambda", "Report_Fn2")),
        ("f" * 64, Target("lambda", "f" * 64)),
        ("report-fn:prod", Target("lambda", "report-fn:prod")),
        ("report-fn:7", Target("lambda", "report-fn:7")),
        ("report-fn:$LATEST", Target("lambda", "report-fn:$LATEST")),
        ("123456789012:function:report-fn", Target("lambda", "123456789012:function:report-fn")),
        (
            "123456789012:function:report-fn:live",
            Target("lambda", "123456789012:function:report-fn:live"),
        ),
        (
            "arn:aws:lambda:us-east-1:123456789012:function:report-fn",
            Target("lambda", "arn:aws:lambda:us-east-1:123456789012:function:report-fn"),
        ),
        (
            "arn:aws:lambda:eu-west-2:123456789012:function:report-fn:3",
            Target("lambda", "arn:aws:lambda:eu-west-2:123456789012:function:report-fn:3"),
        ),
        (
            "arn:aws-cn:lambda:cn-north-1:123456789012:function:f",
            Target("lambda", "arn:aws-cn:lambda:cn-north-1:123456789012:function:f"),
        ),
        (
            "arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:f",
            Target("lambda", "arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:f"),
        ),
        ("flow://cleanup-flow", Target("flow", "cleanup-flow")),
        ("flow://" + "s" * 80, Target("flow", "s" * 80)),
        (
            "flow://arn:aws:states:us-west-2:123456789012:stateMachine:cleanup",
            Target("flow", "arn:aws:states:us-west-2:123456789012:stateMachine:cleanup"),
        ),
        (
            "flow://arn:aws:states:us-west-2:123456789012:stateMachine:cleanup:live",
            Target("flow", "arn:aws:states:us-west-2:123456789012:stateMachine:cleanup:live"),
        ),
    ],
)
def test_valid_services(service: str, target: Target) -> None:
    assert parse_service(service) == target
    assert target.service == service
    job = one(service=service).jobs[0]
    assert job.target == target and job.service == service


@pytest.mark.parametrize(
    "service",
    [
        "f" * 65 + ":prod",
        "report-fn:",
        "report-fn:a:b",
        "12345678901:function:f",
        "arn:aws:lambda:us-east-1:12345:function:f",
        "arn:aws:lambda:useast1:123456789012:function:f",
        "arn:aws:s3:::bucket",
        "arn:aws:lambda:us-east-1:123456789012:layer:f",
        "flow://" + "s" * 81,
        "flow://arn:aws:states:us-east-1:123456789012:activity:x",
        "flow:/cleanup",
        "https://user:secret@example.com/fn",
        " report-fn",
    ],
)
def test_invalid_services(service: str) -> None:
    reason = parse_service(service)
    assert isinstance(reason, str) and repr(service) in reason
    assert errors(one(service=service)) == [invalid(reason)]


@pytest.mark.parametrize("zone", ["EST", "MST", "HST", "Etc/GMT+5", "Etc/GMT-14"])
def test_fixed_offset_zone_loads_with_a_warning(zone: str) -> None:
    cron_file = one(timezone=zone)
    assert cron_file.ok and cron_file.jobs[0].zone == zone
    assert warnings(cron_file) == [
        f"Job report time zone {zone} never follows daylight saving - name a region such as "
        "America/New_York"
    ]


@pytest.mark.parametrize(
    "zone", ["UTC", "Etc/UTC", "America/New_York", "Asia/Kolkata", "US/Eastern", "EST5EDT"]
)
def test_zones_without_warning(zone: str) -> None:
    cron_file = one(timezone=zone)
    assert cron_file.ok and cron_file.problems == ()


def test_unknown_zone_skips_only_that_entry() -> None:
    cron_file = load(document({**BASE, "timezone": "America/NewYork"}, {**BASE, "name": "b"}))
    assert errors(cron_file) == [
        invalid("unknown time zone 'America/NewYork' - did you mean America/New_York?")
    ]
    assert [job.name for job in cron_file.jobs] == ["b"]


def test_underscore_parameters_are_dropped_with_a_warning() -> None:
    cron_file = one(parameters={"region": "east", "_origin": "x", "_secret": {"a": 1}})
    assert cron_file.ok
    assert cron_file.jobs[0].parameters == {"region": "east"}
    assert warnings(cron_file) == [
        "Job report parameter _origin ignored - a key that starts with '_' is reserved for the "
        "system",
        "Job report parameter _secret ignored - a key that starts with '_' is reserved for the "
        "system",
    ]


def test_nested_underscore_keys_are_kept() -> None:
    job = one(parameters={"options": {"_inner": 1}}).jobs[0]
    assert job.parameters == {"options": {"_inner": 1}}


def test_unknown_job_key_warns_and_the_entry_loads() -> None:
    cron_file = one(timezon="America/New_York", color="blue", schedule="x")
    assert cron_file.ok and len(cron_file.jobs) == 1
    assert warnings(cron_file) == [
        "Job report key timezon ignored - did you mean timezone?",
        "Job report key color ignored - the keys are name, cron, service, timezone, "
        "parameters, description, resolver, misfire, overlap, max_buffered, max_running, pool, "
        "timeout, retry, pause_after_failures, enabled, start, end, input, dead_letter, ecs, "
        "http, jitter, window",
        "Job report key schedule ignored - did you mean cron?",
    ]


def test_unknown_key_explains_a_missing_one() -> None:
    cron_file = one(service=None, servce="fn")
    assert [(p.level, p.message) for p in cron_file.problems] == [
        ("warning", "Job report key servce ignored - did you mean service?"),
        ("error", invalid("missing service")),
    ]


def test_resolver_is_accepted_and_ignored() -> None:
    cron_file = one(resolver="v1.state.resolver")
    assert cron_file.ok and cron_file.problems == ()


def test_entries_sharing_a_name_are_all_skipped() -> None:
    cron_file = load(
        document(
            {**BASE, "name": "a"},
            {**BASE, "name": "b"},
            {**BASE, "name": "a"},
            {**BASE, "name": "c"},
            {**BASE, "name": "a", "cron": "bad"},
        )
    )
    assert [job.name for job in cron_file.jobs] == ["b", "c"]
    shared = "name 'a' is used by entries #1, #3 and #5 - every entry with this name is skipped"
    assert errors(cron_file) == [
        invalid(shared, 1, "a"),
        invalid(shared, 3, "a"),
        invalid("Bad second in 'bad': illegal characters 'BAD'; " + shared, 5, "a"),
    ]
    assert [p.entry for p in cron_file.problems] == [1, 3, 5]
    assert cron_file.skipped == 3


def test_names_are_case_sensitive() -> None:
    cron_file = load(document({**BASE, "name": "a"}, {**BASE, "name": "A"}))
    assert cron_file.ok and len(cron_file.jobs) == 2


def test_a_key_written_twice_in_an_entry_is_invalid() -> None:
    cron_file = load(
        "jobs:\n"
        "  - name: a\n    cron: '0 0 9 * * ?'\n    service: fn\n    cron: '0 0 10 * * ?'\n"
        "  - name: b\n    cron: '0 0 9 * * ?'\n    service: fn\n"
        "    parameters:\n      x: 1\n      x: 2\n"
        "  - name: c\n    cron: '0 0 9 * * ?'\n    service: fn\n"
    )
    assert errors(cron_file) == [
        invalid("key cron appears twice (lines 3 and 5)", 1, "a"),
        invalid("key x appears twice (lines 10 and 11)", 2, "b"),
    ]
    assert [job.name for job in cron_file.jobs] == ["c"]


def test_merge_keys_share_settings() -> None:
    cron_file = load(
        "defaults: &defaults {service: fn, timezone: Europe/Paris, parameters: {a: 1}}\n"
        "jobs:\n"
        "  - {<<: *defaults, name: a, cron: '0 0 9 * * ?'}\n"
        "  - {<<: *defaults, name: b, cron: '0 0 9 * * ?', timezone: UTC}\n"
    )
    assert [(j.name, j.zone, j.service, j.parameters) for j in cron_file.jobs] == [
        ("a", "Europe/Paris", "fn", {"a": 1}),
        ("b", "UTC", "fn", {"a": 1}),
    ]
    assert warnings(cron_file) == [
        "Cron file key defaults ignored - the keys are jobs, deferred.start, leader.election, "
        "misfire.grace, misfire.max, pools"
    ]


def test_plain_dates_stay_text() -> None:
    job = load(
        "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, "
        "parameters: {day: 2026-01-01, at: 2026-01-01T09:00:00Z}}\n"
    ).jobs[0]
    assert job.parameters == {"day": "2026-01-01", "at": "2026-01-01T09:00:00Z"}


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("!!timestamp 2026-01-01", "date"),
        ("!!binary aGVsbG8=", "bytes"),
        ("!!set {a, b}", "set"),
        ("!!omap [a: 1]", "list"),
    ],
)
def test_values_json_cannot_carry(value: str, kind: str) -> None:
    cron_file = load(
        f"jobs:\n  - {{name: a, cron: '0 0 9 * * ?', service: fn, parameters: {{v: {value}}}}}\n"
    )
    if kind == "list":  # !!omap builds a list of pairs: its items are tuples
        reason = "parameter v[0] holds a tuple value, which JSON cannot carry: write it as text"
    else:
        reason = f"parameter v holds a {kind} value, which JSON cannot carry: write it as text"
    assert errors(cron_file) == [invalid(reason, name="a")]


def test_infinity_is_refused() -> None:
    cron_file = load(
        "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, parameters: {n: [1, .inf]}}\n"
    )
    assert errors(cron_file) == [
        invalid("parameter n[1] is NaN or an infinity, which JSON cannot carry", name="a")
    ]
    cron_file = load(
        "jobs:\n  - {name: a, cron: '0 0 9 * * ?', service: fn, parameters: {n: .nan}}\n"
    )
    assert errors(cron_file) == [
        invalid("parameter n is NaN or an infinity, which JSON cannot carry", name="a")
    ]


def test_file_settings() -> None:
    cron_file = load(
        document(BASE, **{"deferred.start": True, "misfire.grace": 0, "misfire.max": 5})
    )
    assert (cron_file.deferred_start, cron_file.misfire_grace, cron_file.misfire_max) == (
        True,
        0,
        5,
    )
    assert cron_file.problems == ()


def test_leader_election_is_reported_as_not_supported() -> None:
    cron_file = load(document(BASE, **{"leader.election": True}))
    assert cron_file.leader_election is True and cron_file.ok
    assert cron_file.problems == (
        Problem(
            "warning",
            "leader.election is not supported and is ignored - the claim in the state table "
            "replaces it",
        ),
    )


def test_unknown_top_level_key_is_a_warning() -> None:
    cron_file = load("jobs: []\ndeferred:\n  start: true\nmisfire.grce: 10\n")
    assert cron_file.ok and cron_file.deferred_start is False
    assert warnings(cron_file) == [
        "Cron file key deferred ignored - did you mean deferred.start?",
        "Cron file key misfire.grce ignored - did you mean misfire.grace?",
    ]


def test_a_duplicate_key_outside_the_entries_is_a_warning() -> None:
    cron_file = load("x-shared: {a: 1, a: 2}\njobs: []\n")
    assert warnings(cron_file)[-1] == (
        "Cron file key a appears twice (lines 1 and 1) - the last value is used"
    )


def test_empty_jobs_list_loads_nothing() -> None:
    cron_file = load("jobs: []\n")
    assert cron_file.jobs == () and cron_file.ok and cron_file.entries == 0


def test_jobs_are_hashable_and_frozen() -> None:
    job = one(parameters={"a": [1]}).jobs[0]
    assert hash(job) == hash(one(parameters={"a": [1]}).jobs[0])
    with pytest.raises(AttributeError):
        job.name = "x"  # type: ignore[misc]


# -- the load report ---------------------------------------------------------------------------


def mixed() -> CronFile:
    return load(
        document(
            {**BASE, "name": "a", "timezone": "America/New_York", "parameters": {"_x": 1}},
            {**BASE, "name": "b", "cron": "nope"},
            {**BASE, "name": "c", "service": "flow://clean"},
            **{"leader.election": True},
        ),
        source="cron.yaml",
    )


def test_lines_follow_the_file() -> None:
    assert [(line.level, line.message) for line in mixed().lines()] == [
        (
            "warning",
            "leader.election is not supported and is ignored - the claim in the state "
            "table replaces it",
        ),
        (
            "warning",
            "Job a parameter _x ignored - a key that starts with '_' is reserved for the system",
        ),
        (
            "info",
            "Scheduled job: a, service: report-fn, statement: 0 0 9 * * ?, time zone: "
            "America/New_York",
        ),
        ("error", invalid("Bad second in 'nope': illegal characters 'NOP'", 2, "b")),
        ("info", "Scheduled job: c, service: flow://clean, statement: 0 0 9 * * ?, time zone: UTC"),
    ]


def test_log_to_a_standard_logger(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.jobs")
    with caplog.at_level(logging.INFO, logger="test.jobs"):
        mixed().log(logger)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (line.level.upper(), line.message) for line in mixed().lines()
    ]
    assert caplog.records[1].__dict__["cronFile"] == "cron.yaml"


def test_log_to_powertools(capsys: pytest.CaptureFixture[str]) -> None:
    from aws_lambda_powertools import Logger

    logger = Logger(service="test-jobs", level="INFO")
    mixed().log(logger)
    out = capsys.readouterr().out
    assert "Scheduled job: c, service: flow://clean" in out
    assert '"level":"ERROR"' in out.replace(" ", "")


@pytest.mark.parametrize("zone", ["EST", "MST", "HST", "Etc/GMT+5", "Etc/GMT-14"])
def test_abbreviations_and_fixed_offsets_warn_that_they_never_follow_dst(zone: str) -> None:
    from mini_scheduler.cron.zones import is_fixed_offset

    assert is_fixed_offset(zone)


@pytest.mark.parametrize(
    "zone", ["UTC", "Etc/UTC", "GMT", "America/Panama", "Asia/Tokyo", "America/New_York", "EST5EDT"]
)
def test_regions_and_utc_do_not_warn(zone: str) -> None:
    from mini_scheduler.cron.zones import is_fixed_offset

    assert not is_fixed_offset(zone)
