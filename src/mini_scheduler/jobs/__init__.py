"""cron.yaml: read the job declarations, check every entry, and say what loaded and what did not.

The format is Mercury's, with AWS targets and this project's
per-job additions (docs/cron-yaml.md)::

    jobs:
      - name: "morning-report"
        cron: "0 0 9 * * ?"
        timezone: "America/New_York"
        service: "mini-scheduler-sample-report"    # Lambda; flow://<state machine> for a flow
        parameters: {region: "east"}
    deferred.start: false

Two kinds of trouble, kept apart:

* A file that cannot be read as a whole (empty, not YAML, not a mapping with a ``jobs`` list, a
  bad file-level setting, too large, too deep, an alias bomb) raises :class:`CronFileError`
  naming the source. Nothing is half-loaded: the caller gets a whole file or an error.
* A bad entry is skipped with ``Invalid job entry#<n> - check name, schedule and service:
  <reason>`` and the others load; every reason found in an entry is listed, joined with
  ``"; "``. An entry whose name reads as a name
  (:func:`readable_name`) is named after its number, ``Invalid job entry#2 (bad-cron) - ...``;
  any other name, and any key, is shown quoted, cut and on one line, never as it is. A reason
  names a parameter by its key or path and the rule it breaks, never by its value.

:func:`load` never reads the clock or the network; :mod:`mini_scheduler.jobs.locations` finds
the file. The modules, by concern:

* ``model``: :class:`Job`, :class:`Target`, :class:`Retry`, :class:`CronFile` and its load
  report.
* ``yaml``: the bounded YAML loader (size, depth, nodes, aliases, keys written twice).
* ``loader``: :func:`load`, the file-level checks and settings.
* ``validate``: one entry, checked by a table of readers, one per key.
* ``names``: job names and services (Lambda functions, ``flow://`` state machines).
* ``limits``: what a target and a store accept: parameter rules, sizes, the reserved ``_`` keys.
* ``text``: how a message shows a value (short, on one line, never a parameter's value).
* ``locations``: ``CRON_FILE``, S3 or a local file, cached between ticks.
"""

from __future__ import annotations

from mini_scheduler.jobs.limits import (
    DISPATCH_RESERVE,
    DYNAMODB_ITEM_LIMIT,
    LAMBDA_ASYNC_PAYLOAD_LIMIT,
    STEP_FUNCTIONS_INPUT_LIMIT,
    check_parameters_fit,
    parameters_limit,
    reserved_note,
    split_reserved,
)
from mini_scheduler.jobs.loader import load
from mini_scheduler.jobs.model import (
    DEFAULT_FLOW_TIMEOUT,
    DEFAULT_LAMBDA_TIMEOUT,
    DEFAULT_TIMEZONE,
    MAX_BACKOFF,
    MAX_RETRIES,
    CronFile,
    Job,
    Problem,
    Retry,
    Target,
    scheduled_line,
)
from mini_scheduler.jobs.names import name_problem, parse_service, readable_name
from mini_scheduler.jobs.text import printable
from mini_scheduler.jobs.yaml import MAX_FILE_BYTES

__all__ = [
    "DEFAULT_FLOW_TIMEOUT",
    "DEFAULT_LAMBDA_TIMEOUT",
    "DEFAULT_TIMEZONE",
    "DISPATCH_RESERVE",
    "DYNAMODB_ITEM_LIMIT",
    "LAMBDA_ASYNC_PAYLOAD_LIMIT",
    "MAX_BACKOFF",
    "MAX_FILE_BYTES",
    "MAX_RETRIES",
    "STEP_FUNCTIONS_INPUT_LIMIT",
    "CronFile",
    "Job",
    "Problem",
    "Retry",
    "Target",
    "check_parameters_fit",
    "load",
    "name_problem",
    "parameters_limit",
    "parse_service",
    "printable",
    "readable_name",
    "reserved_note",
    "scheduled_line",
    "split_reserved",
]
