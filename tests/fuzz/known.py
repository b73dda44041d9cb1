"""Crashes the fuzz tests found, each with the fix it needs in src/.

While a crash is still there (its ``probe`` reproduces it on the pure code, no AWS needed):

* its regression test in ``test_found_crashes.py`` is an expected failure that names the fix;
* the fuzz tests let that one crash pass (it is reported already) and fail on any other.

Once the fix lands the probe no longer reproduces it: the regression test runs for real, and the
fuzz tests treat that crash like any other. Nothing here needs editing when a fix lands; an entry
can be deleted once its fix is in.
"""

from __future__ import annotations

import decimal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import pytest

from mini_scheduler.errors import EventError, StoreError
from mini_scheduler.handlers.ticker import parse_tick
from mini_scheduler.jobs import Target, check_parameters_fit
from mini_scheduler.model import parse_instant
from mini_scheduler.recorder import completion_from_event
from mini_scheduler.zones import get_zone


def _raises(call: Callable[[], Any], kind: type[BaseException]) -> bool:
    try:
        call()
    except kind:
        return True
    except Exception:
        return False
    return False


def _accepts(call: Callable[[], Any]) -> bool:
    try:
        call()
    except EventError:
        return False
    except Exception:
        return True
    return True


def _crashes(call: Callable[[], Any]) -> bool:
    """Whether ``call()`` raises anything but an EventError."""
    return _raises(call, Exception) and not _raises(call, EventError)


_STOPS = (1e300, -1e17, float("nan"))


def _innermost(exc: BaseException) -> str:
    """``<file name>:<function>`` of the innermost frame of mini_scheduler's own code."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if "/mini_scheduler/" in frame.filename.replace("\\", "/")
    ]
    if not frames:
        return ""
    frame = frames[-1]
    return f"{frame.filename.replace(chr(92), '/').rsplit('/', 1)[-1]}:{frame.name}"


def _sfn(stop: Any) -> dict[str, Any]:
    return {
        "source": "aws.states",
        "detail": {"status": "SUCCEEDED", "name": "job@2026-11-30T14-15-00Z", "stopDate": stop},
    }


def _lambda(firing_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "requestContext": {"condition": "Success"},
        "requestPayload": {"firingId": firing_id},
        **extra,
    }


@dataclass(frozen=True)
class KnownCrash:
    name: str
    fix: str
    probe: Callable[[], bool]
    """True while the crash is still in the code."""
    matches: Callable[[BaseException], bool]
    """Whether an exception a handler raised is this crash."""

    @property
    def present(self) -> bool:
        return _present(self.name)

    def xfail_if_present(self) -> None:
        """Make the calling test an expected failure while the crash is there."""
        if self.present:
            pytest.xfail(f"known crash {self.name}, not fixed yet: {self.fix}")


KNOWN: tuple[KnownCrash, ...] = (
    KnownCrash(
        "instant-out-of-range",
        "src/mini_scheduler/model.py parse_instant: `moment.astimezone(UTC)` raises "
        "OverflowError (not ValueError) for an instant whose UTC time falls outside years "
        "1-9999 (9999-12-31T23:59:59-01:00, 0001-01-01T00:00:00+01:00); catch it and raise "
        "ValueError('... is out of range'), which parse_tick and the recorder's _when handle",
        lambda: _raises(lambda: parse_instant("9999-12-31T23:59:59-01:00"), OverflowError),
        lambda exc: isinstance(exc, OverflowError) and _innermost(exc) == "model.py:parse_instant",
    ),
    KnownCrash(
        "tick-out-of-range",
        "src/mini_scheduler/handlers/ticker.py parse_tick: a tick (or Scheduled Event time) "
        "whose window ends past datetime's range (9999-12-31T23:59:00Z) makes Ticker.tick "
        "overflow (start + 60 s); refuse with EventError a minute outside the engine's years "
        "1970-2999",
        lambda: _accepts(lambda: parse_tick({"tick": "9999-12-31T23:59:00Z"})),
        lambda exc: isinstance(exc, OverflowError) and _innermost(exc).startswith("ticker.py:"),
    ),
    KnownCrash(
        "stop-date-out-of-range",
        "src/mini_scheduler/recorder.py _from_step_functions: `datetime.fromtimestamp(stop / "
        "1000, UTC)` raises OverflowError/ValueError/OSError for a stopDate out of range or NaN "
        "(and takes true as 1 ms); take a finite int or float that is not a bool, catch "
        "(OverflowError, OSError, ValueError) and fall back to the event's time",
        lambda: any(_crashes(partial(completion_from_event, _sfn(stop))) for stop in _STOPS),
        lambda exc: (
            isinstance(exc, OverflowError | OSError | ValueError)
            and _innermost(exc) == "recorder.py:_from_step_functions"
        ),
    ),
    KnownCrash(
        "response-context-not-an-object",
        "src/mini_scheduler/recorder.py _from_lambda_destination: `(event.get("
        '"responseContext") or {}).get("functionError")` raises AttributeError when '
        "responseContext is a truthy non-object (a string, a list); read functionError only "
        "from a Mapping",
        lambda: _raises(
            lambda: completion_from_event(_lambda("job@2026-11-30T14:00:00Z", responseContext="x")),
            AttributeError,
        ),
        lambda exc: (
            isinstance(exc, AttributeError)
            and _innermost(exc) == "recorder.py:_from_lambda_destination"
        ),
    ),
    KnownCrash(
        "firing-id-not-a-job-name",
        "src/mini_scheduler/recorder.py _firing_id: the job part of a firing id is not checked, "
        "so one longer than DynamoDB's key limit (2048 bytes) fails the UpdateItem "
        "(ValidationException, a StoreError, out of the handler); refuse with EventError a "
        "firing id whose job part is not a job name (jobs.name_problem: 1-64 letters, digits, "
        "'.', '_', '-'), checking the length first and echoing at most 100 characters",
        lambda: _accepts(
            lambda: completion_from_event(_lambda("x" * 3000 + "@2026-11-30T14:00:00Z"))
        ),
        lambda exc: (
            isinstance(exc, StoreError)
            and "ValidationException: Hash primary key" in str(exc)
            and _innermost(exc).startswith(("recorder.py:", "dynamodb.py:"))
        ),
    ),
    KnownCrash(
        "zone-name-too-long",
        "src/mini_scheduler/zones.py _zone_file: a zone name longer than the file system allows "
        "(a path part over 255 bytes: a cron.yaml `timezone:` of 300 letters) raises OSError "
        "(ENAMETOOLONG) from read_bytes, which is not caught: load() raises OSError for the whole "
        "file instead of skipping the entry with 'unknown time zone'; refuse names longer than "
        "64 characters up front and catch OSError there as UnknownTimeZoneError",
        lambda: _raises(lambda: get_zone("x" * 300), OSError),
        lambda exc: isinstance(exc, OSError) and _innermost(exc) == "zones.py:_zone_file",
    ),
    KnownCrash(
        "parameters-dynamodb-cannot-store",
        "src/mini_scheduler/jobs.py check_parameters_fit/_json_problem: parameters that are "
        "valid JSON of an allowed size but that DynamoDB cannot store pass the check: a number "
        "of more than 38 digits or outside 1E-130..9.99E+125 (1.0e+300, 10**40: boto3 raises "
        "decimal.Overflow/Rounded/Inexact, not a StoreError), an empty key at any depth "
        "(ValidationException: Empty attribute name), nesting past DynamoDB's 32 levels (the "
        "parameters map is the item's first: MAX_PARAMETER_DEPTH must be 31, not 32), or a "
        "DynamoDB item size over 400 KB under the JSON bound (130,000 empty lists: 390 KB of "
        "JSON, 520 KB in DynamoDB). From cron.yaml such a job loads, its firing is dispatched, "
        "recording it fails after the dispatch and the tick crashes; the claim's lease then "
        "expires and the sweep dispatches it again, every lease (6 dispatches of one firing in "
        "12 minutes), until misfire.grace. A manual run with such overrides raises out of the "
        "handler. Refuse them as an invalid entry / a rejected event: check each number with "
        "decimal.Context(prec=38, Emin=-128, Emax=126, traps=[Clamped, Overflow, Inexact, "
        "Rounded, Underflow]).create_decimal(repr), refuse empty keys, and measure DynamoDB's "
        "size of the parameters (string and key: UTF-8 bytes; number: about 1 byte per 2 "
        "digits + 1; null and bool: 1; list and map: 3 + 1 per element + the elements) "
        "against DYNAMODB_ITEM_LIMIT - DISPATCH_RESERVE as well as the JSON size",
        lambda: check_parameters_fit(Target("lambda", "fn"), {"n": 1e300}) is None,
        lambda exc: (
            (
                isinstance(exc, decimal.DecimalException)
                or (
                    isinstance(exc, StoreError)
                    and any(
                        text in str(exc)
                        for text in (
                            "Item size has exceeded",
                            "Nesting Levels",
                            "Empty attribute name",
                            "Number overflow",
                            "Number underflow",
                        )
                    )
                )
            )
            and _innermost(exc).startswith(("dynamodb.py:", "ticker.py:"))
        ),
    ),
)
BY_NAME = {crash.name: crash for crash in KNOWN}


@cache
def _present(name: str) -> bool:
    return BY_NAME[name].probe()


def known(exc: BaseException) -> KnownCrash | None:
    """The known crash ``exc`` is, while that crash is still in the code; else None."""
    for crash in KNOWN:
        if crash.present and crash.matches(exc):
            return crash
    return None
