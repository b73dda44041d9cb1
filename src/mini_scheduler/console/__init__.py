"""The operator console: a web page and a JSON API on 127.0.0.1 over the deployed stacks of every
region (``mini-scheduler console``), or over ``make run``'s in-process state.

An optional extra (``mini-scheduler[console]``: FastAPI, uvicorn, Jinja2, cron-descriptor), never
in the functions' packages. Every action goes through :class:`~mini_scheduler.operator.Operator`,
as the CLI's do.

* :mod:`.sites`: one region as the console reaches it (its operator path, and how a manual run
  reaches its ticker).
* :mod:`.service`: what the page and the API read and do, across the regions, as plain data:
  one method per route, done by :mod:`.regions` (the regions served, a job found by name),
  :mod:`.jobs`, :mod:`.history`, :mod:`.environment`, :mod:`.actions` and :mod:`.deferred`.
* :mod:`.views`: how a firing, a run and a job's parameters look in the answers.
* :mod:`.timeline`: the next hours' firings per job and the zones' DST changes (pure).
* :mod:`.words`: a Quartz statement in words.
* :mod:`.app`: the FastAPI application (CSRF, errors as messages, the page); :mod:`.routes`
  its routes, by page.
* :mod:`.server`: serving it on loopback.
"""
