"""Section 9 (issue 29): a firing of each target kind but Lambda's and flows' (sections 1 to 8
measure those): an SQS, SNS, EventBridge, ECS or webhook target, in requests and in CPU, against the
floor of the same bare client call.

For each kind, a real tick (``rig.bench``: the ticker as the handler builds it, on DynamoDB Local)
of ``firings`` jobs of one queue, topic or bus, all due in the same second, sends them to a stub of
the four services and of a webhook's receiver (:mod:`benchmarks.stub_targets`, in a process of its
own, answering after the same latency as the stub Lambda). ECS jobs are
``ecs://mini-cluster/mini-task:1`` on FARGATE in one subnet, their ``container`` named (no
DescribeTaskDefinition); webhooks POST to the stub's ``/hook/run`` (``http.insecure`` and
``http.allow_private``: it is ``http://127.0.0.1``), a connection a firing, as the dispatcher does.
The ticker's clients of those services are made at its first firing of the kind, so an untimed first
tick of other jobs (ten firings a dispatch worker) makes them and opens the connections; the second
tick is measured: every AWS request it made (botocore's ``before-call``, DynamoDB's claims, marks
and closes included) and its dispatch requests alone (a webhook's POSTs: the stub's count), per
firing; its CPU (``time.process_time``, this process: the stub and DynamoDB Local run apart) per
firing, the whole tick's; its start to the last dispatch's answer (botocore's; a webhook's answer is
not timed: its tick's return), and to its return (the closes of the runs come after). Each tick is
checked against the stub: every due firing sent exactly once, nothing else.

The floor is what a hand-written scheduler would do: the bare boto3 call per firing (one
``SendMessage``, ``Publish`` or ``PutEvents`` of one entry, carrying the ticker's body and message
attributes; a ``RunTask`` with the same placement and container overrides; an
``http.client.HTTPConnection`` POST of the same body with its ``Idempotency-Key``, a connection
each), on as many threads as ``DISPATCH_WORKERS``, a client made as the ticker's are
(:class:`mini_scheduler.aws.Clients`), on the same stub, its connections opened by an untimed round
first. The batched floor (ten firings a ``SendMessageBatch``, ``PublishBatch`` or ``PutEvents``) is
printed beside it, for information; ECS and webhooks have no call that carries more than one firing.
One run of each.

The target: fewer than one AWS request per firing, for the batched kinds. An ECS or webhook firing
is one RunTask or one POST (RunTask's ``count`` starts copies of one task, its overrides shared), so
its figure is 1 and the claims' share: informational, printed with its breakdown. The CPU ratio is
informational: the floor is the dispatch alone, while the ticker's CPU also pays for the claims,
marks, closes and log lines of each firing, so no ratio of the two is a target this issue sets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import boto3

from benchmarks.kind_floors import KINDS, FloorRun, Kind, check_once, floor
from benchmarks.rig import FIRST_MINUTE, Bench, Rig, cron_file, environment
from benchmarks.rig import firing_ids as due_ids
from benchmarks.stub_targets import StubTargets
from benchmarks.table import Row, ratio, seconds

__all__ = ["KINDS", "FloorRun", "Kind", "KindResult", "KindTick", "rows", "run"]

SECTION = "9 target kinds"
REQUESTS = 1.0  # issue 29: fewer AWS requests than firings, for a batched kind
BATCH = 10  # entries a batched floor's request carries (the services' most)


@dataclass(frozen=True)
class KindTick:
    """The measured tick of one kind."""

    firings: int
    wall: float
    to_last_dispatch: float
    cpu: float
    calls: dict[str, int]  # the ticker's requests per service.Operation (botocore)
    sent: dict[str, int]  # the stub's requests per service.Operation

    def requests(self, service: str | None = None) -> int:
        return sum(n for op, n in self.calls.items() if service is None or op.startswith(service))


@dataclass(frozen=True)
class KindResult:
    kind: Kind
    workers: int
    tick: KindTick
    floor: FloorRun
    batched: FloorRun | None  # None: the kind has no batch call

    def requests(self) -> dict[str, int]:
        """The tick's requests per ``service.Operation``: botocore's, and a webhook's POSTs."""
        return self.tick.calls if self.kind.events else self.tick.calls | self.tick.sent

    def dispatches(self) -> int:
        """The tick's dispatch requests, as the ticker's session (a webhook's: the stub) saw."""
        if self.kind.events:
            return self.tick.requests(f"{self.kind.events}.")
        return sum(self.tick.sent.values())

    def sent(self) -> int:
        """Firings the tick and the floors sent."""
        return self.tick.firings + self.floor.calls + (self.batched.calls if self.batched else 0)


class LastAnswer:
    """When the last answer of a dispatch request came (``time.perf_counter``)."""

    def __init__(self) -> None:
        self.at = 0.0
        self._lock = threading.Lock()

    def __call__(self, **_: Any) -> None:
        now = time.perf_counter()
        with self._lock:
            self.at = max(self.at, now)

    def watch(self, session: boto3.session.Session) -> None:
        for kind in KINDS:
            for operation in {kind.single, kind.batched or kind.single}:
                if kind.events:
                    session.events.register(f"after-call.{kind.events}.{operation}", self)


def _progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run(
    rig: Rig,
    *,
    firings: int,
    workers: int,
    latency: float,
    progress: Callable[[str], None] = _progress,
) -> list[KindResult]:
    """Each kind's tick of ``firings`` and its floors, on a stub started here (AssertionError
    when a firing did not reach the stub exactly once)."""
    results = []
    with StubTargets(latency) as stub, environment(stub.endpoints()):
        for kind in KINDS:
            progress(f"{kind.name}: a tick of {firings} firings, after an untimed smaller one")
            tick = _measured_tick(rig, stub, kind, firings, workers)
            progress(f"{kind.name}: the floors, {firings} bare {kind.single}, {workers} threads")
            bare = floor(stub, kind, firings, workers, batch=1)
            batched = floor(stub, kind, firings, workers, batch=BATCH) if kind.batched else None
            results.append(KindResult(kind, workers, tick, bare, batched))
    return results


def _measured_tick(rig: Rig, stub: StubTargets, kind: Kind, firings: int, workers: int) -> KindTick:
    """A ticker of ``firings`` jobs due at the measured minute, and of as many as open each of
    its dispatch workers' connections (ten a request) due at the minute before: that untimed
    tick makes the kind's client, as a warm ticker has made it."""
    warm, later = min(firings, BATCH * workers), FIRST_MINUTE + timedelta(minutes=1)
    service, options = kind.service(stub.endpoint), kind.options
    first = cron_file(
        warm, _at(FIRST_MINUTE), prefix=f"{kind.name}-warm", service=service, options=options
    )
    measured = cron_file(
        firings, _at(later), prefix=f"{kind.name}-job", service=service, options=options
    )
    cron = dataclasses.replace(
        measured, jobs=first.jobs + measured.jobs, version=f"{measured.version}+{warm}"
    )
    last = LastAnswer()
    session = boto3.session.Session()
    last.watch(session)
    bench = rig.bench(cron, workers=workers, session=session)
    try:
        _tick(rig, bench, stub, last, FIRST_MINUTE)
        return _tick(rig, bench, stub, last, later)
    finally:
        rig.drop_table(bench.table)


def _at(minute: datetime) -> str:
    """A Quartz expression firing once a day, at second 0 of ``minute``."""
    return f"0 {minute.minute} {minute.hour} * * ?"


def _tick(
    rig: Rig, bench: Bench, stub: StubTargets, last: LastAnswer, minute: datetime
) -> KindTick:
    from mini_scheduler.handlers import _runtime as runtime

    expected = due_ids(bench.cron, minute)
    bench.clock.set(minute)
    bench.log.reset()
    stub.reset()
    last.at = 0.0
    with contextlib.redirect_stdout(rig.emf):  # Powertools prints EMF blobs to stdout
        cpu, started = time.process_time(), time.perf_counter()
        summary = bench.ticker.tick(minute)
        ended, cpu = time.perf_counter(), time.process_time() - cpu
        runtime.flush()
    rig.logs.take()
    rig.emf.take()
    counts = stub.counts()
    check_once(counts["firings"], expected, f"tick {minute:%H:%M} ({summary.to_json()})")
    return KindTick(
        firings=len(expected),
        wall=ended - started,
        to_last_dispatch=(last.at - started) if last.at else ended - started,
        cpu=cpu,
        calls=dict(bench.log.calls),
        sent=dict(counts["requests"]),
    )


def _per(calls: dict[str, int], firings: int) -> str:
    """``Operation share`` per firing, largest first."""
    shares = sorted(
        ((n / firings, op.split(".", 1)[1]) for op, n in calls.items() if n), reverse=True
    )
    return ", ".join(f"{name} {share:.3f}" for share, name in shares)


def _requests_row(result: KindResult) -> Row:
    """All the tick's requests per firing: below one for a batched kind (the target); an ECS or
    webhook firing is one request of its own, so its figure is 1 and the claims' share."""
    kind, n = result.kind, result.tick.firings
    requests = result.requests()
    total = sum(requests.values())
    every = total / n
    what = "AWS requests" if kind.events else "requests (AWS and the webhook's)"
    figure = f"{kind.name}: {what} per firing, ticker: all {total:,} of a {n:,}-firing tick"
    if kind.batched:
        return Row(
            SECTION,
            f"{figure} ({_per(requests, n)})",
            f"{every:.3f}",
            f"the floor: 1 ({kind.single})",
            ratio(every, 1.0, digits=3),
            f"< {REQUESTS:g}",
            every < REQUESTS,
        )
    return Row(
        SECTION,
        f"{figure} ({_per(requests, n)}; informational: no {kind.single} carries two firings, "
        f"so 1 {kind.single} a firing is the least, the rest the claims' and marks' share)",
        f"{every:.3f}",
        f"the floor: 1 ({kind.single})",
        ratio(every, 1.0, digits=3),
        "informational",
    )


def _kind_rows(result: KindResult) -> list[Row]:
    kind, tick, bare, batched = result.kind, result.tick, result.floor, result.batched
    n, name = tick.firings, kind.name
    dispatch = result.dispatches() / n
    floor_cpu = bare.cpu / bare.calls
    last = "last dispatch" if kind.events else "its return (a webhook's answer is not timed)"
    out = [
        _requests_row(result),
        Row(
            SECTION,
            f"  {name}: dispatch requests per firing ({_per(tick.sent, n)}; "
            f"{n / max(1, result.dispatches()):.1f} firings a request)",
            f"{dispatch:.3f}",
            f"the floor: 1; batched by {BATCH}: {batched.requests / n:.3f}"
            if batched
            else f"the floor: 1; no batch call ({kind.single} is one firing's)",
            ratio(dispatch, 1.0, digits=3),
        ),
        Row(
            SECTION,
            f"  {name}: ticker CPU per firing (the whole tick's: claims, dispatch, marks, "
            "closes, log lines)",
            f"{tick.cpu / n * 1000:.2f} ms",
            f"the floor: {floor_cpu * 1000:.2f} ms per {kind.single}",
            ratio(tick.cpu / n, floor_cpu, digits=2),
            "informational",
        ),
        Row(
            SECTION,
            f"  {name}: {n:,} due, {result.workers} workers: start -> {last} (the tick "
            f"returned at {seconds(tick.wall)})",
            seconds(tick.to_last_dispatch),
            f"the floor, {bare.requests:,} bare {kind.single}: {seconds(bare.wall)}",
            ratio(tick.to_last_dispatch, bare.wall, digits=2),
            "informational",
        ),
    ]
    if batched:
        out.append(
            Row(
                SECTION,
                f"  {name} floors: {bare.requests:,} bare {kind.single} / {batched.requests:,} "
                f"{kind.batched} of {BATCH}, {result.workers} threads (CPU per firing)",
                f"{floor_cpu * 1000:.2f} ms",
                f"batched: {batched.cpu / batched.calls * 1000:.2f} ms "
                f"(walls {seconds(bare.wall)}, {seconds(batched.wall)})",
                ratio(batched.cpu / batched.calls, floor_cpu, digits=2),
            )
        )
    return out


def rows(results: Sequence[KindResult]) -> list[Row]:
    out = [row for result in results for row in _kind_rows(result)]
    if results:
        sent = sum(result.sent() for result in results)
        out.append(
            Row(
                SECTION,
                "each firing sent exactly once (the stub's count per firing id: a message's "
                "firingId, a RunTask's MINI_SCHEDULER_FIRING_ID, a webhook's Idempotency-Key): "
                "ticks and floors",
                f"{sent:,} of {sent:,}",
                ", ".join(r.kind.name for r in results),
                "",
                "all exactly once",
                True,  # a firing not sent exactly once raised before this row was made
            )
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.target_kinds [firings]``: this section alone (DynamoDB Local and
    the stubs started here), its rows printed."""
    from benchmarks import defaults
    from benchmarks.rig import rig
    from benchmarks.table import render

    args = sys.argv[1:] if argv is None else argv
    firings = int(args[0]) if args else 1000
    latency = 0.02
    with rig(latency) as bench_rig:
        found = run(
            bench_rig,
            firings=firings,
            workers=defaults.read().dispatch_workers,
            latency=latency,
        )
    print(render(rows(found)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
