"""A Quartz statement in words, for people: ``0 15 10 ? * 6#3`` is "At 10:15, on the third Friday
of the month". cron-descriptor does the wording (it knows Quartz's seconds, years, ``L``, ``W``
and ``#``); we give it Quartz's day-of-week numbering (1 is Sunday) and a 24-hour clock. The
firings themselves are always ours (:mod:`mini_scheduler.cron`): this is a caption only."""

from __future__ import annotations

import logging
from functools import lru_cache

log = logging.getLogger("mini_scheduler.console")


@lru_cache(maxsize=1024)
def in_words(statement: str) -> str | None:
    """The statement in English, or None when it cannot be put in words (the page then shows
    the statement alone)."""
    try:
        from cron_descriptor import ExpressionDescriptor, Options
    except ImportError:  # the console extra without it: captions are optional
        return None
    options = Options()
    options.use_24hour_time_format = True
    options.day_of_week_start_index_zero = False  # Quartz: 1 is Sunday, 7 is Saturday
    options.verbose = False
    try:
        return str(ExpressionDescriptor(statement, options).get_description())
    except Exception as exc:  # a wording library's failure must never fail a page
        log.debug("No words for %s: %s", statement, exc)
        return None
