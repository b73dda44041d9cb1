"""Active-environment stores (one module a backend) and the active check built on them."""

from mini_scheduler.environment.active import ActiveEnvironment, Reading
from mini_scheduler.environment.base import EnvironmentStore

__all__ = ["ActiveEnvironment", "EnvironmentStore", "Reading"]
