"""A webhook's ``http:`` mapping (issue 29): the defaults, every key's forms, the exact refusals
(secrets in headers, http:// without insecure, private and metadata addresses, auth: iam for
a host it cannot sign for), the warnings, and options that read back to themselves."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from mini_scheduler.jobs.http_options import (
    HTTP_KEYS,
    address_problem,
    http_warnings,
    read_http,
    secret_source,
    shown_url,
    status_expected,
)
from tests.unit.jobs.helpers import errors, invalid, one

URL = "https://hooks.example.com/fire?token=abc"
DEFAULTS: dict[str, Any] = {
    "method": "POST",
    "headers": {},
    "timeout": 30,
    "expected_status": ["2xx"],
    "insecure": False,
    "allow_private": False,
}
SOURCE_RULE = "secretsmanager:<secret name or ARN>[:<json key>] or ssm:<parameter>"


def read(value: object, url: str = URL) -> dict[str, Any]:
    options, reasons = read_http(value, url)
    assert reasons == [] and options is not None
    assert read_http(options, url) == (options, [])  # the options read back to themselves
    return options


def refused(value: object, url: str = URL) -> list[str]:
    options, reasons = read_http(value, url)
    assert options is None and reasons
    return reasons


# -- what loads -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, {}], ids=["absent", "empty"])
def test_defaults(value: object) -> None:
    assert read(value) == DEFAULTS


@pytest.mark.parametrize(
    ("value", "changed"),
    [
        pytest.param({"method": "get"}, {"method": "GET"}, id="method-any-case"),
        pytest.param({"method": "DELETE"}, {"method": "DELETE"}, id="delete"),
        pytest.param({"headers": {"X-Team": "ops"}}, {"headers": {"X-Team": "ops"}}, id="header"),
        pytest.param({"timeout": 1}, {"timeout": 1}, id="shortest"),
        pytest.param({"timeout": 60}, {"timeout": 60}, id="longest"),
        pytest.param({"timeout": 2.5}, {"timeout": 2.5}, id="fraction"),
        pytest.param(
            {"expected_status": [200, "3XX", 404]},
            {"expected_status": [200, "3xx", 404]},
            id="statuses",
        ),
        pytest.param(
            {"insecure": False, "allow_private": True}, {"allow_private": True}, id="flags"
        ),
        pytest.param(
            {"secret_header": {"name": "Authorization", "from": "ssm:/mini-scheduler/hook"}},
            {"secret_header": {"name": "Authorization", "from": "ssm:/mini-scheduler/hook"}},
            id="secret-ssm",
        ),
        pytest.param(
            {"method": None, "timeout": None, "headers": None, "auth": None},
            {},
            id="nulls-are-defaults",
        ),
    ],
)
def test_valid_keys(value: dict[str, Any], changed: dict[str, Any]) -> None:
    assert read(value) == {**DEFAULTS, **changed}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("secretsmanager:mini-scheduler/hook", ("secretsmanager", "mini-scheduler/hook", None)),
        (
            "secretsmanager:mini-scheduler/hook:token",
            ("secretsmanager", "mini-scheduler/hook", "token"),
        ),
        (
            "secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:mini-scheduler/h-AbCdEf",
            (
                "secretsmanager",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:mini-scheduler/h-AbCdEf",
                None,
            ),
        ),
        (
            "secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:h-AbCdEf:key",
            (
                "secretsmanager",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:h-AbCdEf",
                "key",
            ),
        ),
        ("ssm:/mini-scheduler/hook", ("ssm", "/mini-scheduler/hook", None)),
        (
            "ssm:arn:aws:ssm:us-east-1:123456789012:parameter/mini-scheduler/hook",
            ("ssm", "arn:aws:ssm:us-east-1:123456789012:parameter/mini-scheduler/hook", None),
        ),
        ("vault:x", None),
        ("secretsmanager:", None),
        ("ssm:a b", None),
        ("secretsmanager:a:b:c", None),
    ],
)
def test_secret_sources(source: str, expected: tuple[str, str, str | None] | None) -> None:
    assert secret_source(source) == expected


@pytest.mark.parametrize(
    ("url", "value", "signing"),
    [
        pytest.param(
            "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/run",
            {"auth": "iam"},
            ("execute-api", "eu-west-1"),
            id="api-gateway",
        ),
        pytest.param(
            "https://abcdef.lambda-url.us-east-2.on.aws/",
            {"auth": "iam"},
            ("lambda", "us-east-2"),
            id="function-url",
        ),
        pytest.param(
            "https://api.example.com/run",
            {"auth": "iam", "signing_service": "execute-api", "signing_region": "us-east-1"},
            ("execute-api", "us-east-1"),
            id="custom-domain",
        ),
        pytest.param(
            "https://abc123.execute-api.eu-west-1.amazonaws.com/prod",
            {"auth": "iam", "signing_region": "eu-central-1"},
            ("execute-api", "eu-central-1"),
            id="region-given",
        ),
    ],
)
def test_auth_iam(url: str, value: dict[str, Any], signing: tuple[str, str]) -> None:
    options = read(value, url)
    assert (options["auth"], options["signing_service"], options["signing_region"]) == (
        "iam",
        *signing,
    )


@pytest.mark.parametrize(
    ("url", "value"),
    [
        pytest.param("http://hooks.example.com/x", {"insecure": True}, id="insecure"),
        pytest.param("https://10.1.2.3/x", {"allow_private": True}, id="private"),
        pytest.param("https://[fd00::1]/x", {"allow_private": True}, id="unique-local"),
        pytest.param("https://8.8.8.8/x", {}, id="public-literal"),
    ],
)
def test_allowed_urls(url: str, value: dict[str, Any]) -> None:
    read(value, url)


# -- what is refused ------------------------------------------------------------------------------


SECRET_IN_HEADERS = (
    "http.headers {} is refused: secrets never go in cron.yaml - name it in "
    "http.secret_header (its value read from Secrets Manager or SSM), or sign with http.auth: iam"
)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        pytest.param(
            [1],
            "http must be a mapping of method, headers, timeout, expected_status, auth, "
            "signing_service, signing_region, secret_header, insecure and allow_private, not a "
            "list",
            id="not-a-mapping",
        ),
        pytest.param(
            {"method": "TRACE"},
            "http.method must be one of POST, GET, PUT, PATCH and DELETE, not 'TRACE'",
            id="method",
        ),
        pytest.param(
            {"headers": ["X"]},
            "http.headers must be a mapping of header names to text, not a list",
            id="headers-list",
        ),
        *(
            pytest.param(
                {"headers": {name: "x"}}, SECRET_IN_HEADERS.format(name), id=f"secret-{name}"
            )
            for name in ("Authorization", "cookie", "Proxy-Authorization", "X-Amz-Security-Token")
        ),
        pytest.param(
            {"headers": {"Idempotency-Key": "x"}},
            "http.headers Idempotency-Key is refused: the scheduler sets it (the firing's own "
            "value)",
            id="idempotency-key",
        ),
        pytest.param(
            {"headers": {"Content-Length": "1"}},
            "http.headers Content-Length is refused: the connection sets it",
            id="content-length",
        ),
        pytest.param(
            {"headers": {"Bad Name": "x"}},
            "http.headers name 'Bad Name' is not a header name (letters, digits and -, at most "
            "128)",
            id="header-name",
        ),
        pytest.param(
            {"headers": {"X-A": "line\r\nInjected: 1"}},
            "http.headers.X-A must be printable ASCII text of at most 4096 characters (no line "
            "break)",
            id="header-injection",
        ),
        pytest.param(
            {"headers": {"X-A": 1}}, "http.headers.X-A must be text, not a number", id="header-int"
        ),
        pytest.param(
            {"headers": {"X-A": "1", "x-a": "2"}},
            "http.headers names x-a twice (header names ignore case)",
            id="header-twice",
        ),
        pytest.param(
            {"timeout": 0}, "http.timeout must be a number of seconds from 1 to 60, not 0", id="t0"
        ),
        pytest.param(
            {"timeout": 61},
            "http.timeout must be a number of seconds from 1 to 60, not 61",
            id="t61",
        ),
        pytest.param(
            {"timeout": True},
            "http.timeout must be a number of seconds from 1 to 60, not true",
            id="t-bool",
        ),
        pytest.param(
            {"timeout": float("nan")},
            "http.timeout must be a number of seconds from 1 to 60, not nan",
            id="t-nan",
        ),
        pytest.param(
            {"expected_status": 200},
            'http.expected_status must be a list of statuses (100 to 599) and classes ("2xx"), '
            "not 200",
            id="status-not-list",
        ),
        pytest.param(
            {"expected_status": []},
            'http.expected_status must be a list of statuses (100 to 599) and classes ("2xx"), '
            "not a list",
            id="status-empty",
        ),
        pytest.param(
            {"expected_status": [600]},
            'http.expected_status must be a list of statuses (100 to 599) and classes ("2xx"): '
            "600 is not",
            id="status-600",
        ),
        pytest.param(
            {"expected_status": ["6xx"]},
            'http.expected_status must be a list of statuses (100 to 599) and classes ("2xx"): '
            "'6xx' is not",
            id="status-class",
        ),
        pytest.param(
            {"insecure": "yes"}, "http.insecure must be true or false, not 'yes'", id="insecure"
        ),
        pytest.param(
            {"allow_private": 1}, "http.allow_private must be true or false, not 1", id="private"
        ),
        pytest.param(
            {"auth": "basic"},
            "http.auth must be iam (a SigV4 signature with the ticker's role), not 'basic': for "
            "a token, use http.secret_header",
            id="auth",
        ),
        pytest.param(
            {"signing_service": "execute-api"},
            "http.signing_service is for http.auth: iam",
            id="signing-without-auth",
        ),
        pytest.param(
            {"auth": "iam"},
            "http.auth: iam signs for API Gateway (*.execute-api.<region>.amazonaws.com) and "
            "Lambda function URLs (*.lambda-url.<region>.on.aws); for host hooks.example.com name "
            "http.signing_service and http.signing_region",
            id="iam-other-host",
        ),
        pytest.param(
            {"auth": "iam", "signing_service": "execute-api", "signing_region": "Mars"},
            "http.signing_region 'Mars' is not an AWS service or region",
            id="iam-bad-region",
        ),
        pytest.param(
            {"secret_header": "token"},
            f"http.secret_header must be a mapping {{name: <header>, from: {SOURCE_RULE}}}, not "
            "'token'",
            id="secret-not-mapping",
        ),
        pytest.param(
            {"secret_header": {"name": "X-Token", "from": "vault:hook"}},
            f"http.secret_header.from must be {SOURCE_RULE}, not vault:hook",
            id="secret-source",
        ),
        pytest.param(
            {"secret_header": {"from": "ssm:/x"}},
            "missing http.secret_header.name (the header the secret goes in)",
            id="secret-no-name",
        ),
        pytest.param(
            {"secret_header": {"name": 7, "from": "ssm:/x"}},
            "http.secret_header.name 7 is not a header name (letters, digits and -, at most 128)",
            id="secret-name-number",
        ),
        pytest.param(
            {"secret_header": {"name": "Idempotency-Key", "from": "ssm:/x"}},
            "http.secret_header.name Idempotency-Key is refused: the scheduler sets it (the "
            "firing's own value)",
            id="secret-ours",
        ),
        pytest.param(
            {"headers": {"X-Token": "a"}, "secret_header": {"name": "x-token", "from": "ssm:/x"}},
            "http.secret_header.name x-token is also in http.headers",
            id="secret-twice",
        ),
        pytest.param(
            {
                "auth": "iam",
                "signing_service": "execute-api",
                "signing_region": "us-east-1",
                "secret_header": {"name": "Authorization", "from": "ssm:/x"},
            },
            "http.secret_header.name Authorization is refused with http.auth: iam (the signature "
            "sets it)",
            id="secret-and-iam",
        ),
    ],
)
def test_refused_keys(value: object, reason: str) -> None:
    assert refused(value) == [reason]


@pytest.mark.parametrize(
    ("url", "value", "reason"),
    [
        pytest.param(
            "http://hooks.example.com/x?token=abc",
            {},
            "service http://hooks.example.com/x is http://: its firings and secret headers would "
            "cross the network in clear - use https://, or set http.insecure: true",
            id="http",
        ),
        pytest.param(
            "https://169.254.169.254/latest/meta-data/",
            {"allow_private": True},
            "service host 169.254.169.254 is the instance metadata service: a webhook never "
            "calls it (it answers AWS credentials)",
            id="metadata-even-allowed",
        ),
        pytest.param(
            "https://[fd00:ec2::254]/",
            {"allow_private": True},
            "service host fd00:ec2::254 is the instance metadata service: a webhook never calls "
            "it (it answers AWS credentials)",
            id="metadata-ipv6",
        ),
        pytest.param(
            "https://10.0.0.1/x",
            {},
            "service host 10.0.0.1 is a private address - set http.allow_private: true to call it",
            id="private",
        ),
        pytest.param(
            "https://127.1/x",
            {},
            "service host 127.1, read as 127.0.0.1 is a loopback address - set "
            "http.allow_private: true to call it",
            id="short-loopback",
        ),
        pytest.param(
            "https://2852039166/",
            {"allow_private": True},
            "service host 2852039166, read as 169.254.169.254 is the instance metadata service: "
            "a webhook never calls it (it answers AWS credentials)",
            id="metadata-as-a-number",
        ),
        pytest.param(
            "https://[::ffff:192.168.1.1]/",
            {},
            "service host ::ffff:192.168.1.1, read as 192.168.1.1 is a private address - set "
            "http.allow_private: true to call it",
            id="mapped",
        ),
    ],
)
def test_refused_urls(url: str, value: dict[str, Any], reason: str) -> None:
    assert reason in refused(value, url)


@pytest.mark.parametrize(
    ("address", "what"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("169.254.10.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("10.0.0.1", "a private address"),
        ("172.16.0.1", "a private address"),
        ("192.168.0.1", "a private address"),
        ("100.64.0.1", "a shared (CGNAT) address"),
        ("fc00::1", "a unique-local address"),
        ("224.0.0.1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("0.0.0.0", "a reserved address"),
        ("192.0.2.1", "a private address"),  # documentation: not the internet's
    ],
)
def test_refused_ranges(address: str, what: str) -> None:
    parsed = ipaddress.ip_address(address)
    assert (
        address_problem(parsed) == f"{parsed} is {what} - set http.allow_private: true to call it"
    )
    assert address_problem(parsed, allow_private=True) is None


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700:4700::1111", "100.128.0.1"])
def test_internet_addresses(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


def test_several_reasons_at_once() -> None:
    reasons = refused({"method": 1, "timeout": 0}, "http://10.0.0.1/")
    assert [reason.split(" ", 1)[0] for reason in reasons] == [
        "http.method",
        "http.timeout",
        "service",
        "service",
    ]


def test_a_reason_never_shows_a_header_value_or_the_query() -> None:
    reasons = refused(
        {"headers": {"Authorization": "Bearer s3cr3t", "X-A": 7, "X-B": "s3cr3t\n"}},
        "http://hooks.example.com/x?token=s3cr3t",
    )
    assert len(reasons) == 4 and not any("s3cr3t" in reason for reason in reasons)


# -- warnings -------------------------------------------------------------------------------------


def test_warnings() -> None:
    value = {
        "methd": "GET",
        "headers": {"X-Api-Key": "k", "X-Team": "ops"},
        "secret_header": {"name": "X-Token", "from": "ssm:/x", "form": "x"},
    }
    assert http_warnings(value, "Job hook") == [
        "Job hook key http.methd ignored - did you mean http.method?",
        "Job hook key http.secret_header.form ignored - did you mean http.secret_header.from?",
        "Job hook header http.headers.X-Api-Key looks like a secret: whoever reads cron.yaml "
        "reads it - use http.secret_header (Secrets Manager or SSM)",
    ]
    assert read(value)["method"] == "POST"  # an unknown key is only a warning


@pytest.mark.parametrize("value", [None, [], {"method": "GET"}])
def test_no_warnings(value: object) -> None:
    assert http_warnings(value, "Job hook") == []


def test_keys() -> None:
    assert len(HTTP_KEYS) == len(set(HTTP_KEYS)) == 10


# -- helpers the dispatcher shares ----------------------------------------------------------------


def test_shown_url_drops_the_query() -> None:
    assert shown_url("https://h.example.com:8443/a/b?token=x") == "https://h.example.com:8443/a/b"


@pytest.mark.parametrize(
    ("status", "expected", "answer"),
    [
        (200, ["2xx"], True),
        (299, ["2xx"], True),
        (302, ["2xx"], False),
        (302, ["2xx", 302], True),
        (404, [200, "3xx"], False),
        (503, ["5xx"], True),
    ],
)
def test_status_expected(status: int, expected: list[int | str], answer: bool) -> None:
    assert status_expected(status, expected) is answer


# -- through cron.yaml's load ---------------------------------------------------------------------


def test_a_webhook_loads_with_its_options() -> None:
    cron_file = one(service=URL, http={"method": "PUT", "timeout": 5})
    assert cron_file.ok, cron_file.problems
    target = cron_file.jobs[0].target
    assert (target.kind, target.name) == ("https", URL)
    assert target.options == {**DEFAULTS, "method": "PUT", "timeout": 5}


def test_a_webhook_without_http_gets_the_defaults() -> None:
    assert one(service=URL).jobs[0].target.options == DEFAULTS


def test_a_refused_mapping_skips_the_entry() -> None:
    cron_file = one(service="http://hooks.example.com/x", http={"headers": {"Cookie": "c=1"}})
    assert errors(cron_file) == [
        invalid(
            SECRET_IN_HEADERS.format("Cookie")
            + "; service http://hooks.example.com/x is http://: its firings and secret headers "
            "would cross the network in clear - use https://, or set http.insecure: true"
        )
    ]


@pytest.mark.parametrize(
    ("address", "inside"),
    [
        ("64:ff9b::a00:1", "10.0.0.1"),  # NAT64: a NAT gateway with DNS64 reaches it
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("64:ff9b:1::a00:1", "10.0.0.1"),
        ("2002:a9fe:a9fe::1", "169.254.169.254"),  # 6to4
        ("::ffff:0:a9fe:a9fe", "169.254.169.254"),  # IPv4-translated
        ("::a00:1", "10.0.0.1"),  # IPv4-compatible
        ("::ffff:10.0.0.1", "10.0.0.1"),  # mapped
    ],
)
def test_an_ipv4_address_inside_an_ipv6_one_is_checked_as_itself(address: str, inside: str) -> None:
    """Issue 29's review: an IPv6 form of a private or metadata address is refused as that
    address is, with allow_private or not for the metadata service."""
    found = address_problem(ipaddress.ip_address(address))
    assert found is not None and found.startswith(inside)
    if inside == "169.254.169.254":
        assert address_problem(ipaddress.ip_address(address), allow_private=True) is not None


def test_a_public_ipv4_address_inside_an_ipv6_one_may_be_called() -> None:
    assert address_problem(ipaddress.ip_address("64:ff9b::808:808")) is None
