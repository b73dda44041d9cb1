"""The floor: what dispatching N firings costs with nothing of the scheduler around it.

A bare boto3 ``Invoke`` loop (``InvocationType=Event``) against the same stub Lambda, at the
same latency, with as many threads as the ticker's dispatch workers, one call per firing: a
``ThreadPoolExecutor`` that submits each call, a client made the way the ticker's is
(``mini_scheduler.aws.Clients``: the same retries and connection pool) on a session of its own,
and a payload of the ticker's shape (job, firing id, scheduled time, origin, parameters), JSON
encoded per call and its empty answer read (so the connection goes back to the pool, as the
ticker's dispatcher does).

Measured as the ticks are: wall time from the loop's start to the last answer, best of N, and
this process's CPU time (``time.process_time``, every thread) per call, the least of N. The
client is made before the clock starts, as a warm ticker's are; the first loop opens the
connections, as a bench's first tick does. The stub's counts check each call arrived once.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import boto3

from benchmarks.rig import FIRST_MINUTE, REGION, TARGET, Rig
from mini_scheduler.aws import Clients
from mini_scheduler.model import Firing


@dataclass(frozen=True)
class FloorRun:
    calls: int
    wall: float  # the loop's start to its last answer
    cpu: float  # this process's CPU time over the loop


@dataclass
class Floor:
    calls: int
    workers: int
    runs: list[FloorRun] = field(default_factory=list)

    @property
    def wall(self) -> float:
        """The best wall time of the loop."""
        return min(r.wall for r in self.runs)

    @property
    def cpu_per_call(self) -> float:
        """CPU seconds per call, the least of the loops."""
        return min(r.cpu for r in self.runs) / self.calls


def _payloads(calls: int, round_: int) -> list[dict[str, Any]]:
    minute = FIRST_MINUTE + timedelta(days=1, minutes=round_)
    out = []
    for index in range(calls):
        firing = Firing(f"floor-job-{index:05d}", minute)
        payload: dict[str, Any] = {
            "job": firing.job,
            "firingId": firing.id,
            "scheduledTime": firing.scheduled_time,
            "origin": f"{REGION}/prod",
            "manual": False,
            "parameters": {"region": "east"},
        }
        out.append(payload)
    return out


def measure(rig: Rig, *, calls: int, workers: int, repeats: int) -> Floor:
    """``repeats`` loops of ``calls`` Invokes on ``workers`` threads (AssertionError when the
    stub did not see each call exactly once)."""
    client = Clients(REGION, session=boto3.session.Session(), pool=workers)("lambda")
    floor = Floor(calls, workers)

    def invoke(payload: dict[str, Any]) -> None:
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        answer = client.invoke(FunctionName=TARGET, InvocationType="Event", Payload=body)
        answer["Payload"].read()
        if answer["StatusCode"] != 202:
            raise AssertionError(f"the stub answered {answer['StatusCode']}, not 202")

    for round_ in range(repeats):
        payloads = _payloads(calls, round_)
        rig.stub.reset()
        cpu, started = time.process_time(), time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="floor") as pool:
            for future in [pool.submit(invoke, payload) for payload in payloads]:
                future.result()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        seen: dict[str, int] = rig.stub.counts()["firings"]
        once = sum(1 for n in seen.values() if n == 1)
        if once != calls or len(seen) != calls:
            raise AssertionError(f"the floor's loop reached the stub {seen} for {calls} calls")
        floor.runs.append(FloorRun(calls, wall, cpu))
    client.close()
    return floor
