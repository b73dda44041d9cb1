"""``python -m mini_scheduler.local``: the local run (see :mod:`mini_scheduler.local.main`)."""

from mini_scheduler.local.main import run

raise SystemExit(run())
