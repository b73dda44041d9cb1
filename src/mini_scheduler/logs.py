"""Where the package's log lines go when the CLI or the local run, not a Lambda runtime, is in
charge of the terminal."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")


@contextmanager
def package_logs(handler: logging.Handler | None, level: int = logging.INFO) -> Iterator[None]:
    """Route the package's log records (``mini_scheduler.*``) to ``handler`` alone, or with
    None to the root logger's handlers, whatever a Lambda runtime set up on its loggers
    (Powertools gives each its own handler and stops propagation); restored afterwards."""
    manager = logging.root.manager
    package = logging.getLogger("mini_scheduler")
    children = [
        logger
        for name, logger in list(manager.loggerDict.items())
        if name.startswith("mini_scheduler.") and isinstance(logger, logging.Logger)
    ]
    saved = [(lg, list(lg.handlers), lg.propagate, lg.level) for lg in (package, *children)]
    for logger in children:
        logger.handlers = []
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    package.handlers = [handler] if handler is not None else []
    package.propagate = handler is None
    package.setLevel(level)
    try:
        yield
    finally:
        for logger, handlers, propagate, was in saved:
            logger.handlers = handlers
            logger.propagate = propagate
            logger.setLevel(was)
