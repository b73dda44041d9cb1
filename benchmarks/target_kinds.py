"""Section 9 (issue 29): a firing of an SQS, SNS or EventBridge target, in requests and in CPU,
against the floor of the same bare client call.

For each kind, a real tick (``rig.bench``: the ticker as the handler builds it, on DynamoDB
Local) of ``firings`` jobs of one queue, topic or bus, all due in the same second, sends them
to a stub of the three services (:mod:`benchmarks.stub_targets`, in a process of its own,
answering after the same latency as the stub Lambda). The ticker's clients of those services
are made at its first firing of the kind, so an untimed first tick of other jobs (ten firings a
dispatch worker) makes them and opens the connections; the second tick is measured: every AWS
request it made (botocore's ``before-call``, DynamoDB's claims, marks and closes included) and
its dispatch requests alone, per firing; its CPU (``time.process_time``, this process: the
stub and DynamoDB Local run apart) per firing, the whole tick's; its start to the last
dispatch's answer, and to its return (the closes of the runs come after). Each tick is
checked against the stub: every due firing sent exactly once, nothing else.

The floor is what a hand-written scheduler would do: the bare boto3 call per firing (one
``SendMessage``, ``Publish`` or ``PutEvents`` of one entry, carrying the ticker's body and
message attributes), on as many threads as ``DISPATCH_WORKERS``, a client made as the ticker's
are (:class:`mini_scheduler.aws.Clients`), on the same stub, its connections opened by an
untimed round first. The batched floor (ten firings a ``SendMessageBatch``, ``PublishBatch`` or
``PutEvents``) is printed beside it, for information. One run of each.

The target: fewer than one AWS request per firing. The CPU ratio is informational: the floor
is the dispatch alone, while the ticker's CPU also pays for the claims, marks, closes and log
lines of each firing, so no ratio of the two is a target this issue sets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import boto3

from benchmarks.rig import ACCOUNT, FIRST_MINUTE, REGION, Bench, Rig, cron_file, environment
from benchmarks.rig import firing_ids as due_ids
from benchmarks.stub_targets import StubTargets
from benchmarks.table import Row, ratio, seconds
from mini_scheduler.aws import Clients
from mini_scheduler.model import Firing, payload

SECTION = "9 target kinds"
REQUESTS = 1.0  # issue 29: fewer AWS requests than firings, for a batched kind
BATCH = 10  # entries a batched floor's request carries (the services' most)
ORIGIN = f"{REGION}/prod"


@dataclass(frozen=True)
class Kind:
    name: str  # the target's kind, and its service's botocore name
    target: str  # the name after the scheme
    single: str  # the operation of one firing
    batched: str  # the operation of ten
    events: str  # the service as botocore's events name it (``before-call.<events>.<Op>``)

    @property
    def service(self) -> str:
        return f"{self.name}://{self.target}"


KINDS = (
    Kind("sqs", "bench-queue", "SendMessage", "SendMessageBatch", "sqs"),
    Kind("sns", "bench-topic", "Publish", "PublishBatch", "sns"),
    Kind("events", "bench-bus", "PutEvents", "PutEvents", "eventbridge"),
)
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:bench-topic"


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
class FloorRun:
    calls: int  # firings sent
    requests: int
    wall: float
    cpu: float


@dataclass(frozen=True)
class KindResult:
    kind: Kind
    workers: int
    tick: KindTick
    floor: FloorRun
    batched: FloorRun


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
            for operation in {kind.single, kind.batched}:
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
            floor = _floor(stub, kind, firings, workers, batch=1)
            batched = _floor(stub, kind, firings, workers, batch=BATCH)
            results.append(KindResult(kind, workers, tick, floor, batched))
    return results


def _measured_tick(rig: Rig, stub: StubTargets, kind: Kind, firings: int, workers: int) -> KindTick:
    """A ticker of ``firings`` jobs due at the measured minute, and of as many as open each of
    its dispatch workers' connections (ten a request) due at the minute before: that untimed
    tick makes the kind's client, as a warm ticker has made it."""
    warm, later = min(firings, BATCH * workers), FIRST_MINUTE + timedelta(minutes=1)
    first = cron_file(warm, _at(FIRST_MINUTE), prefix=f"{kind.name}-warm", service=kind.service)
    measured = cron_file(firings, _at(later), prefix=f"{kind.name}-job", service=kind.service)
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
    _check_once(counts["firings"], expected, f"tick {minute:%H:%M} ({summary.to_json()})")
    return KindTick(
        firings=len(expected),
        wall=ended - started,
        to_last_dispatch=(last.at - started) if last.at else ended - started,
        cpu=cpu,
        calls=dict(bench.log.calls),
        sent=dict(counts["requests"]),
    )


def _check_once(seen: dict[str, int], expected: set[str], what: str) -> None:
    """AssertionError unless the stub saw each of ``expected`` once, and nothing else."""
    wrong = sorted(fid for fid in expected if seen.get(fid) != 1)
    stray = sorted(set(seen) - expected)
    if wrong or stray:
        raise AssertionError(
            f"{what}: {len(wrong)} of {len(expected)} firings not sent exactly once "
            f"({wrong[:5]}); not due: {stray[:5]}"
        )


def _bodies(calls: int) -> list[tuple[str, str]]:
    """A firing id and the ticker's body for each call (firings of a day the ticks never see)."""
    minute = FIRST_MINUTE + timedelta(days=1)
    out = []
    for index in range(calls):
        firing = Firing(f"floor-job-{index:05d}", minute)
        body = payload(firing, {"region": "east"}, ORIGIN)
        out.append((firing.id, json.dumps(body, separators=(",", ":"), ensure_ascii=False)))
    return out


def _attributes(firing_id: str) -> dict[str, Any]:
    job = firing_id.split("@", 1)[0]
    return {
        name: {"DataType": "String", "StringValue": value}
        for name, value in (("firingId", firing_id), ("job", job))
    }


def _sender(kind: Kind, client: Any) -> Callable[[Sequence[tuple[str, str]]], None]:
    """The bare call of ``kind`` for one firing (a list of one) or a batch of them."""
    if kind.name == "sqs":
        url = client.get_queue_url(QueueName=kind.target)["QueueUrl"]  # once, as a cache would

        def sqs(group: Sequence[tuple[str, str]]) -> None:
            if len(group) == 1:
                fid, body = group[0]
                client.send_message(
                    QueueUrl=url, MessageBody=body, MessageAttributes=_attributes(fid)
                )
                return
            entries = [
                {"Id": str(i), "MessageBody": body, "MessageAttributes": _attributes(fid)}
                for i, (fid, body) in enumerate(group)
            ]
            _all_sent(client.send_message_batch(QueueUrl=url, Entries=entries), len(group))

        return sqs
    if kind.name == "sns":

        def sns(group: Sequence[tuple[str, str]]) -> None:
            if len(group) == 1:
                fid, body = group[0]
                client.publish(TopicArn=TOPIC_ARN, Message=body, MessageAttributes=_attributes(fid))
                return
            entries = [
                {"Id": str(i), "Message": body, "MessageAttributes": _attributes(fid)}
                for i, (fid, body) in enumerate(group)
            ]
            answer = client.publish_batch(TopicArn=TOPIC_ARN, PublishBatchRequestEntries=entries)
            _all_sent(answer, len(group))

        return sns

    def events(group: Sequence[tuple[str, str]]) -> None:
        entries = [
            {
                "Source": "mini-scheduler",
                "DetailType": "Scheduled Job Firing",
                "Detail": body,
                "EventBusName": kind.target,
                "Resources": [],
            }
            for _, body in group
        ]
        if client.put_events(Entries=entries)["FailedEntryCount"]:
            raise AssertionError("the stub failed a PutEvents entry")

    return events


def _all_sent(answer: dict[str, Any], count: int) -> None:
    if answer.get("Failed") or len(answer["Successful"]) != count:
        raise AssertionError(f"the stub did not take the batch: {answer}")


def _floor(stub: StubTargets, kind: Kind, calls: int, workers: int, *, batch: int) -> FloorRun:
    """``calls`` firings sent ``batch`` a request on ``workers`` threads, after an untimed round
    of ``workers`` requests that opens the client's connections."""
    client = Clients(REGION, session=boto3.session.Session(), pool=workers)(kind.name)
    send = _sender(kind, client)
    warm = _bodies(workers)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="floor") as pool:
        list(pool.map(send, [[body] for body in warm]))
        bodies = _bodies(calls)
        groups = [bodies[i : i + batch] for i in range(0, calls, batch)]
        stub.reset()
        cpu, started = time.process_time(), time.perf_counter()
        for future in [pool.submit(send, group) for group in groups]:
            future.result()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    client.close()
    _check_once(stub.counts()["firings"], {fid for fid, _ in bodies}, f"{kind.name} floor")
    return FloorRun(calls, len(groups), wall, cpu)


def _per(calls: dict[str, int], firings: int) -> str:
    """``Operation share`` per firing, largest first."""
    shares = sorted(
        ((n / firings, op.split(".", 1)[1]) for op, n in calls.items() if n), reverse=True
    )
    return ", ".join(f"{name} {share:.3f}" for share, name in shares)


def _kind_rows(result: KindResult) -> list[Row]:
    kind, tick, floor, batched = result.kind, result.tick, result.floor, result.batched
    n, name = tick.firings, kind.name
    every = tick.requests() / n
    dispatch = tick.requests(f"{kind.events}.") / n
    floor_cpu = floor.cpu / floor.calls
    return [
        Row(
            SECTION,
            f"{name}: AWS requests per firing, ticker: all {tick.requests():,} of a {n:,}-firing "
            f"tick ({_per(tick.calls, n)})",
            f"{every:.3f}",
            f"the floor: 1 ({kind.single})",
            ratio(every, 1.0, digits=3),
            f"< {REQUESTS:g}",
            every < REQUESTS,
        ),
        Row(
            SECTION,
            f"  {name}: dispatch requests per firing ({_per(tick.sent, n)}; "
            f"{n / max(1, tick.requests(f'{kind.events}.')):.1f} firings a request)",
            f"{dispatch:.3f}",
            f"the floor: 1; batched by {BATCH}: {batched.requests / n:.3f}",
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
            f"  {name}: {n:,} due, {result.workers} workers: start -> last dispatch (the tick "
            f"returned at {seconds(tick.wall)})",
            seconds(tick.to_last_dispatch),
            f"the floor, {floor.requests:,} bare {kind.single}: {seconds(floor.wall)}",
            ratio(tick.to_last_dispatch, floor.wall, digits=2),
            "informational",
        ),
        Row(
            SECTION,
            f"  {name} floors: {floor.requests:,} bare {kind.single} / {batched.requests:,} "
            f"{kind.batched} of {BATCH}, {result.workers} threads (CPU per firing)",
            f"{floor_cpu * 1000:.2f} ms",
            f"batched: {batched.cpu / batched.calls * 1000:.2f} ms "
            f"(walls {seconds(floor.wall)}, {seconds(batched.wall)})",
            ratio(batched.cpu / batched.calls, floor_cpu, digits=2),
        ),
    ]


def rows(results: Sequence[KindResult]) -> list[Row]:
    out = [row for result in results for row in _kind_rows(result)]
    if results:
        sent = sum(r.tick.firings + r.floor.calls + r.batched.calls for r in results)
        out.append(
            Row(
                SECTION,
                "each firing sent exactly once (the stub's count per firingId): ticks and floors",
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
