"""Dispatchers: hand a claimed firing to its target (one module a kind of target)."""

from mini_scheduler.dispatch.base import Dispatcher, Dispatchers

__all__ = ["Dispatcher", "Dispatchers"]
