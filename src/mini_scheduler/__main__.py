"""``python -m mini_scheduler``: the same as the ``mini-scheduler`` command."""

from mini_scheduler.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
