"""Claim stores: claims, run records, job state, pauses and watermarks (one module a backend)."""

from mini_scheduler.claims.base import ClaimResult, ClaimStore, Control, Pause
from mini_scheduler.claims.records import JobStart, JobState, RunRecord

__all__ = ["ClaimResult", "ClaimStore", "Control", "JobStart", "JobState", "Pause", "RunRecord"]
