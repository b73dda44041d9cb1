"""The ``mini-scheduler`` command line: main.py (the parser and the command table), context.py
(what a command is given, exit codes), where.py (regions, stacks and the stores of a region),
render.py (columns, times), and one module per command group: files.py (validate, next),
jobs.py (jobs, history), run.py (run), pause.py (pause, resume), environment.py (status,
failover), tick.py, local.py."""
