"""The cron engine: Quartz statements, when they fire, and the zones they fire in. Pure: no
module here reads the clock.

``parse(statement)`` reads a Quartz statement (:mod:`~mini_scheduler.cron.parser`, a port of
Quartz 2.3.2's parser) into a :class:`CronExpression`, whose ``firings`` and ``next_after``
(:mod:`~mini_scheduler.cron.evaluator`) walk a zone's wall clock through its offset changes
(:mod:`~mini_scheduler.cron.zones`). :mod:`~mini_scheduler.cron.unix` says the Quartz statement
for a Unix cron line.
"""

from mini_scheduler.cron.evaluator import CronExpression
from mini_scheduler.cron.parser import parse
from mini_scheduler.errors import CronSyntaxError

__all__ = ["CronExpression", "CronSyntaxError", "parse"]
