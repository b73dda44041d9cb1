"""mini-scheduler: Quartz cron jobs on AWS, each firing claimed and dispatched once."""

__version__ = "0.1.0"
