"""A webhook's ``http:`` mapping (``https://`` targets), read and checked at load.

:func:`read_http` answers the options a :class:`~mini_scheduler.jobs.model.Target` keeps (every
key with its default filled in) and the reasons the mapping is refused, each naming its field
(``http.method ...``); :func:`http_warnings` the warnings it gives (an unknown key, a header
whose name looks like a secret's). The options it answers read back to themselves: the
dispatcher reads a target's options again with it, so a target made without cron.yaml (no
options) gets the defaults, and no options are trusted more than cron.yaml's. The metadata
service's address is refused even with ``http.allow_private``.

Secrets never stay in cron.yaml: ``Authorization``, cookies and AWS's own headers are refused in
``http.headers``; ``http.secret_header`` names one header whose value is read at dispatch from
Secrets Manager or SSM. A URL is refused when it is ``http://`` (unless ``http.insecure``) or an
address literal in a range that is not the internet's (private, loopback, link-local, CGNAT,
unique-local, reserved; unless ``http.allow_private``); the dispatcher checks the addresses a
name resolves to in the same way (:func:`address_problem`). A reason never shows a header's
value, nor the URL's query (either may hold a token).
"""

from __future__ import annotations

import ipaddress
import math
import re
import socket
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from mini_scheduler.jobs.text import describe, kind, printable, words
from mini_scheduler.jobs.unknown import unknown_key

__all__ = [
    "DEFAULT_TIMEOUT",
    "HTTP_KEYS",
    "MAX_TIMEOUT",
    "METHODS",
    "address_problem",
    "http_warnings",
    "read_http",
    "secret_source",
    "shown_url",
    "status_expected",
]

METHODS: Final = ("POST", "GET", "PUT", "PATCH", "DELETE")
DEFAULT_TIMEOUT: Final = 30
MAX_TIMEOUT: Final = 60
"""A webhook's request is made by a tick's worker, which may start it at the minute's last
second: it must answer well within the ticker's 150-second limit (template.yaml)."""
MAX_HEADERS: Final = 50
MAX_HEADER_VALUE: Final = 4096
HTTP_KEYS: Final = (
    "method",
    "headers",
    "timeout",
    "expected_status",
    "auth",
    "signing_service",
    "signing_region",
    "secret_header",
    "insecure",
    "allow_private",
)
_SECRET_KEYS: Final = ("name", "from")
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
"""An HTTP header name (RFC 9110 token), at most 128 characters."""
_SECRET_NAMES: Final = frozenset({"authorization", "cookie", "proxy-authorization"})
_OURS: Final = frozenset(
    {"idempotency-key", "x-mini-scheduler-job", "x-mini-scheduler-firing", "host"}
)
_CONNECTION: Final = frozenset(
    {"content-length", "transfer-encoding", "connection", "upgrade", "te", "keep-alive"}
)
_LOOKS_SECRET: Final = re.compile(r"token|secret|passw|api-?key|signature|credential", re.I)
_STATUS_CLASS: Final = re.compile(r"[1-5]xx")
_SOURCE: Final = re.compile(
    r"secretsmanager:(?P<secret>arn:[a-z-]+:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:"
    r"[A-Za-z0-9/_+=.@-]{1,512}|[A-Za-z0-9/_+=.@-]{1,512})(?::(?P<key>[^:]{1,256}))?"
    r"|ssm:(?P<parameter>arn:[a-z-]+:ssm:[a-z0-9-]+:[0-9]{12}:parameter/[A-Za-z0-9_./-]{1,2048}"
    r"|[A-Za-z0-9_./-]{1,2048})"
)
_SOURCE_RULE: Final = "secretsmanager:<secret name or ARN>[:<json key>] or ssm:<parameter>"
_SIGNED_HOSTS: Final = (
    (re.compile(r"[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?"), "execute-api"),
    (re.compile(r"[a-z0-9]+\.lambda-url\.([a-z0-9-]+)\.on\.aws"), "lambda"),
)
_SERVICE: Final = re.compile(r"[a-z0-9-]{1,64}")
_REGION: Final = re.compile(r"[a-z]{2}(?:-[a-z]+)+-[0-9]+")
_METADATA: Final = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)
_SHARED: Final = ipaddress.ip_network("100.64.0.0/10")
_UNIQUE_LOCAL: Final = ipaddress.ip_network("fc00::/7")


_NAT64: Final = (
    ipaddress.ip_network("64:ff9b::/96"),
    ipaddress.ip_network("64:ff9b:1::/48"),
    ipaddress.ip_network("::ffff:0:0:0/96"),  # IPv4-translated (SIIT)
)
_IPV4_COMPATIBLE: Final = ipaddress.ip_network("::/96")


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one reaches (None: none): mapped (``::ffff:a.b.c.d``),
    IPv4-compatible, NAT64 (``64:ff9b::a.b.c.d``: a NAT gateway with DNS64 takes it to the
    IPv4 address), IPv4-translated (``::ffff:0:a.b.c.d``), 6to4 (``2002:AABB:CCDD::``) and
    Teredo. Each is checked as that IPv4 address: none may reach the metadata service or a
    private range in disguise."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in network for network in _NAT64):
        return low
    if address in _IPV4_COMPATIBLE and int(address) > 0xFFFF:  # not ::, ::1
        return low
    return None


def shown_url(url: str) -> str:
    """``url`` as a message shows it: scheme, host, port and path, never the query (it may
    hold a token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def address_problem(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_private: bool = False
) -> str | None:
    """Why a webhook may not reach ``address`` (the range it is in), or None: an address of
    the internet, or with ``allow_private`` any address but the metadata service's."""
    if isinstance(address, ipaddress.IPv6Address):
        address = _embedded_ipv4(address) or address
    if address in _METADATA:
        return (
            f"{address} is the instance metadata service: a webhook never calls it (it "
            "answers AWS credentials)"
        )
    if allow_private or (address.is_global and not address.is_multicast):
        return None
    if address.is_loopback:
        what = "a loopback address"
    elif address.is_link_local:
        what = "a link-local address"
    elif address in _SHARED:
        what = "a shared (CGNAT) address"
    elif address in _UNIQUE_LOCAL:
        what = "a unique-local address"
    elif address.is_multicast:
        what = "a multicast address"
    elif address.is_private and not address.is_reserved and not address.is_unspecified:
        what = "a private address"
    else:
        what = "a reserved address"
    return f"{address} is {what} - set http.allow_private: true to call it"


def secret_source(source: str) -> tuple[str, str, str | None] | None:
    """``http.secret_header.from`` read: ``("secretsmanager", <secret id>, <json key or
    None>)`` or ``("ssm", <parameter>, None)``; None when it is neither."""
    match = _SOURCE.fullmatch(source)
    if match is None:
        return None
    if match["parameter"] is not None:
        return "ssm", match["parameter"], None
    return "secretsmanager", match["secret"], match["key"]


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` writes, when it is one: ``10.0.0.1``, ``::1``, and the forms a
    resolver reads as IPv4 too (``127.1``, ``0x7f000001``, ``2130706433``)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if not re.fullmatch(r"[0-9a-fA-FxX.]+", host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def status_expected(status: int, expected: list[int | str]) -> bool:
    """Whether ``status`` is one of ``expected`` (codes, and classes such as ``"2xx"``)."""
    return any(
        status == item if isinstance(item, int) else str(status)[0] == item[0] for item in expected
    )


def read_http(value: object, url: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The webhook options of the ``http:`` mapping ``value`` (None: every default) for the
    target ``url``, and the reasons it is refused (options None then)."""
    if value is None:
        value = {}
    if not isinstance(value, Mapping):
        return None, [f"http must be a mapping of {words(HTTP_KEYS)}, not {describe(value)}"]
    reasons: list[str] = []
    options: dict[str, Any] = {
        "method": _method(value.get("method"), reasons),
        "headers": _headers(value.get("headers"), reasons),
        "timeout": _timeout(value.get("timeout"), reasons),
        "expected_status": _expected(value.get("expected_status"), reasons),
        "insecure": _flag(value, "insecure", reasons),
        "allow_private": _flag(value, "allow_private", reasons),
    }
    secret = _secret_header(value.get("secret_header"), reasons)
    if secret is not None:
        options["secret_header"] = secret
    options.update(_auth(value, url, reasons))
    reasons.extend(_url_problems(url, options))
    reasons.extend(_clashes(options))
    return (None if reasons else options), reasons


def http_warnings(value: object, label: str) -> list[str]:
    """The warnings the ``http:`` mapping ``value`` gives, each starting with ``label`` (``Job
    <name>``, as :func:`unknown_key` writes it): a key nobody reads (``http.<key>``,
    ``http.secret_header.<key>``), a header whose name looks like it holds a secret."""
    if not isinstance(value, Mapping):
        return []
    warnings = [
        unknown_key(label, key, HTTP_KEYS, "http.") for key in value if key not in HTTP_KEYS
    ]
    secret = value.get("secret_header")
    if isinstance(secret, Mapping):
        warnings.extend(
            unknown_key(label, key, _SECRET_KEYS, "http.secret_header.")
            for key in secret
            if key not in _SECRET_KEYS
        )
    headers = value.get("headers")
    if isinstance(headers, Mapping):
        warnings.extend(
            f"{label} header http.headers.{name} looks like a secret: whoever reads cron.yaml "
            "reads it - use http.secret_header (Secrets Manager or SSM)"
            for name in headers
            if isinstance(name, str) and _TOKEN.fullmatch(name) and _LOOKS_SECRET.search(name)
        )
    return warnings


def _method(value: object, reasons: list[str]) -> str:
    if value is None:
        return "POST"
    if isinstance(value, str) and value.upper() in METHODS:
        return value.upper()
    reasons.append(f"http.method must be one of {words(METHODS)}, not {describe(value)[:40]}")
    return "POST"


def _headers(value: object, reasons: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        reasons.append(f"http.headers must be a mapping of header names to text, not {kind(value)}")
        return {}
    if len(value) > MAX_HEADERS:
        reasons.append(f"http.headers holds {len(value)} headers: at most {MAX_HEADERS}")
        return {}
    headers: dict[str, str] = {}
    for name, text in value.items():
        problem = _header_name_problem(name, "http.headers") or _header_value_problem(name, text)
        if problem:
            reasons.append(problem)
            continue
        if name.lower() in {seen.lower() for seen in headers}:
            reasons.append(f"http.headers names {name} twice (header names ignore case)")
            continue
        headers[name] = text
    return headers


def _header_name_problem(name: object, field: str) -> str | None:
    if name is None and field.endswith(".name"):
        return f"missing {field} (the header the secret goes in)"
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        shown = repr(printable(name, 40)) if isinstance(name, str) else describe(name)
        what = field if field.endswith(".name") else f"{field} name"
        return f"{what} {shown} is not a header name (letters, digits and -, at most 128)"
    lowered = name.lower()
    if field == "http.headers" and (lowered in _SECRET_NAMES or lowered.startswith("x-amz-")):
        return (
            f"http.headers {name} is refused: secrets never go in cron.yaml - name it in "
            "http.secret_header (its value read from Secrets Manager or SSM), or sign with "
            "http.auth: iam"
        )
    if lowered in _OURS:
        return f"{field} {name} is refused: the scheduler sets it (the firing's own value)"
    if lowered in _CONNECTION:
        return f"{field} {name} is refused: the connection sets it"
    return None


def _header_value_problem(name: str, text: object) -> str | None:
    if not isinstance(text, str):
        return f"http.headers.{name} must be text, not {kind(text)}"
    if len(text) > MAX_HEADER_VALUE or not (text.isascii() and text.isprintable()):
        return (
            f"http.headers.{name} must be printable ASCII text of at most {MAX_HEADER_VALUE} "
            "characters (no line break)"
        )
    return None


def _timeout(value: object, reasons: list[str]) -> int | float:
    if value is None:
        return DEFAULT_TIMEOUT
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 1 <= value <= MAX_TIMEOUT
    ):
        return value
    reasons.append(
        f"http.timeout must be a number of seconds from 1 to {MAX_TIMEOUT}, not "
        f"{describe(value)[:40]}"
    )
    return DEFAULT_TIMEOUT


def _expected(value: object, reasons: list[str]) -> list[int | str]:
    rule = 'a list of statuses (100 to 599) and classes ("2xx")'
    if value is None:
        return ["2xx"]
    if not isinstance(value, list) or not value:
        reasons.append(f"http.expected_status must be {rule}, not {describe(value)[:40]}")
        return ["2xx"]
    found: list[int | str] = []
    for item in value:
        if isinstance(item, int) and not isinstance(item, bool) and 100 <= item <= 599:
            found.append(item)
        elif isinstance(item, str) and _STATUS_CLASS.fullmatch(item.lower()):
            found.append(item.lower())
        else:
            reasons.append(f"http.expected_status must be {rule}: {describe(item)[:40]} is not")
    return found


def _flag(value: Mapping[Any, Any], key: str, reasons: list[str]) -> bool:
    item = value.get(key)
    if item is None:
        return False
    if isinstance(item, bool):
        return item
    reasons.append(f"http.{key} must be true or false, not {describe(item)[:40]}")
    return False


def _secret_header(value: object, reasons: list[str]) -> dict[str, str] | None:
    """``{name, from}``: the header, and where its value is read at dispatch."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        reasons.append(
            f"http.secret_header must be a mapping {{name: <header>, from: {_SOURCE_RULE}}}, "
            f"not {describe(value)}"
        )
        return None
    name, source = value.get("name"), value.get("from")
    problem = _header_name_problem(name, "http.secret_header.name")
    if problem:
        reasons.append(problem)
    readable = isinstance(source, str) and secret_source(source) is not None
    if not readable:
        shown = printable(source, 80) if isinstance(source, str) else describe(source)[:80]
        reasons.append(f"http.secret_header.from must be {_SOURCE_RULE}, not {shown}")
    if problem or not readable:
        return None
    return {"name": str(name), "from": str(source)}


def _auth(value: Mapping[Any, Any], url: str, reasons: list[str]) -> dict[str, str]:
    """``auth: iam`` with the service and the region its SigV4 signature names."""
    auth, service, region = (value.get(k) for k in ("auth", "signing_service", "signing_region"))
    if auth is None:
        reasons.extend(
            f"http.{key} is for http.auth: iam"
            for key, item in (("signing_service", service), ("signing_region", region))
            if item is not None
        )
        return {}
    if auth != "iam":
        reasons.append(
            f"http.auth must be iam (a SigV4 signature with the ticker's role), not "
            f"{describe(auth)[:40]}: for a token, use http.secret_header"
        )
        return {}
    for key, item, pattern in (
        ("signing_service", service, _SERVICE),
        ("signing_region", region, _REGION),
    ):
        if item is not None and not (isinstance(item, str) and pattern.fullmatch(item)):
            reasons.append(f"http.{key} {describe(item)[:40]} is not an AWS service or region")
            return {}
    host = urlsplit(url).hostname or ""
    for pattern, signed in _SIGNED_HOSTS:
        match = pattern.fullmatch(host)
        if match:
            service, region = service or signed, region or match[1]
    if service is None or region is None:
        reasons.append(
            f"http.auth: iam signs for API Gateway (*.execute-api.<region>.amazonaws.com) and "
            f"Lambda function URLs (*.lambda-url.<region>.on.aws); for host {host[:80]} name "
            "http.signing_service and http.signing_region"
        )
        return {}
    return {"auth": "iam", "signing_service": str(service), "signing_region": str(region)}


def _url_problems(url: str, options: Mapping[str, Any]) -> list[str]:
    parts = urlsplit(url)
    problems: list[str] = []
    if parts.scheme == "http" and not options["insecure"]:
        problems.append(
            f"service {shown_url(url)[:120]} is http://: its firings and secret headers would "
            "cross the network in clear - use https://, or set http.insecure: true"
        )
    host = parts.hostname or ""
    address = _literal_address(host)
    problem = address_problem(address, options["allow_private"]) if address is not None else None
    if problem:
        written = "" if str(address) == host else f"{host[:60]}, read as "
        problems.append(f"service host {written}{problem}")
    return problems


def _clashes(options: Mapping[str, Any]) -> list[str]:
    secret = options.get("secret_header")
    if secret is None:
        return []
    name = secret["name"].lower()
    if name in {header.lower() for header in options["headers"]}:
        return [f"http.secret_header.name {secret['name']} is also in http.headers"]
    if options.get("auth") == "iam" and (name == "authorization" or name.startswith("x-amz-")):
        return [
            f"http.secret_header.name {secret['name']} is refused with http.auth: iam (the "
            "signature sets it)"
        ]
    return []
