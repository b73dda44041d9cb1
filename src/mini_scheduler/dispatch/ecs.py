"""ECS task targets (``ecs://<cluster>/<task definition>``): RunTask of one task, placed as the
job's ``ecs`` mapping says (:mod:`mini_scheduler.jobs.ecs_options`). The answer is the task's
ARN; the run ends later, when the task's "ECS Task State Change" event says STOPPED (the
recorder: :mod:`mini_scheduler.handlers.events.recorder`).

One container is overridden: the mapping's ``container``, else the task definition's first
essential container (read with DescribeTaskDefinition once per task definition and ticker
container: a family's new revision that renames it needs the mapping's ``container``). It gets
``MINI_SCHEDULER_FIRING_ID`` (the id the dispatch was given: the run's, ``#<attempt>`` from a
retry on) and ``MINI_SCHEDULER_PAYLOAD`` (the payload's compact JSON), with the mapping's own
``environment``, ``command``, ``cpu`` and ``memory``. ECS holds a task's overrides to 8,192
characters of JSON: a firing whose overrides do not fit is refused (DispatchError) before
anything is sent.

A run is one task. Its RunTask carries ``startedBy`` (:func:`started_by`: ``ms-`` and 40 hex of
the run id's sha256), the ``mini-scheduler:*`` tags and a ``clientToken`` of the run id (ECS
answers a RunTask repeated with the same token and parameters with the first one's task, for
up to 24 hours). When RunTask's answer is lost (a BotoCoreError, a 5xx after the SDK's retries)
the task it may have started is looked for with ListTasks by its ``startedBy`` (RUNNING, then
STOPPED) and answered ``<task ARN> (found started)``; when none is listed (ECS lists a new task
eventually), RunTask is sent once more with the same token. A 200 answer that lists
``failures`` and no task is a refusal.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.errors import DispatchError, describe_aws_error
from mini_scheduler.jobs import Target
from mini_scheduler.model import job_of

FIRING_VARIABLE: Final = "MINI_SCHEDULER_FIRING_ID"
PAYLOAD_VARIABLE: Final = "MINI_SCHEDULER_PAYLOAD"
STARTED_BY_PREFIX: Final = "ms-"
OVERRIDES_LIMIT: Final = 8_192
"""The characters of JSON ECS allows a task's overrides."""
FIRING_TAG: Final = "mini-scheduler:firing-id"
JOB_TAG: Final = "mini-scheduler:job"
ATTEMPT_TAG: Final = "mini-scheduler:attempt"
_CLUSTER_ARN_MARK: Final = ":cluster/"


def split_target(name: str) -> tuple[str, str]:
    """An ECS target's cluster (a name or a cluster ARN, which holds a ``/`` of its own) and
    its task definition (a family, ``family:revision`` or an ARN)."""
    start = name.find(_CLUSTER_ARN_MARK) + len(_CLUSTER_ARN_MARK) if name.startswith("arn:") else 0
    cut = name.find("/", start)
    if cut <= 0 or cut == len(name) - 1:
        raise DispatchError(f"ECS target {name[:200]!r} is not <cluster>/<task definition>")
    return name[:cut], name[cut + 1 :]


def started_by(run_id: str) -> str:
    """The ``startedBy`` of a run's task: ``ms-`` and 40 hex digits of the run id's sha256
    (ECS takes up to 128 letters, digits, ``-``, ``/`` and ``_``; a firing id holds ``@``, ``:``
    and ``#``). One per run, the same every time."""
    return STARTED_BY_PREFIX + hashlib.sha256(run_id.encode()).hexdigest()[:40]


def client_token(run_id: str) -> str:
    """RunTask's ``clientToken`` of a run: 64 hex digits (ECS takes up to 64 characters of
    ASCII 33 to 126)."""
    return hashlib.sha256(f"mini-scheduler/{run_id}".encode()).hexdigest()


def run_tags(run_id: str) -> list[dict[str, str]]:
    """The task's tags: its firing id, its job and its attempt. A tag value takes letters,
    digits, spaces and ``+ - = . _ : / @``: a firing id does, a run id's ``#`` does not, so the
    attempt has a tag of its own."""
    firing_id, _, attempt = run_id.partition("#")
    return [
        {"key": FIRING_TAG, "value": firing_id},
        {"key": JOB_TAG, "value": job_of(firing_id) or firing_id},
        {"key": ATTEMPT_TAG, "value": attempt or "1"},
    ]


def container_override(
    container: str, options: Mapping[str, Any], run_id: str, payload: Mapping[str, Any]
) -> dict[str, Any]:
    """The overridden container's part of ``overrides``: the firing's variables first, then
    the mapping's."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    variables = {**options.get("environment", {}), FIRING_VARIABLE: run_id, PAYLOAD_VARIABLE: body}
    override: dict[str, Any] = {
        "name": container,
        "environment": [{"name": name, "value": value} for name, value in variables.items()],
    }
    for key in ("command", "cpu", "memory"):
        if key in options:
            override[key] = options[key]
    return override


def overrides_size(overrides: Mapping[str, Any]) -> int:
    """The characters ECS counts for ``overrides``: its compact JSON."""
    return len(json.dumps(overrides, separators=(",", ":"), ensure_ascii=False))


def placement(options: Mapping[str, Any]) -> dict[str, Any]:
    """RunTask's parameters for where and how the task runs, from the ``ecs`` mapping."""
    request: dict[str, Any] = {}
    if "launch_type" in options:
        request["launchType"] = options["launch_type"]
    if "capacity_provider_strategy" in options:
        request["capacityProviderStrategy"] = [
            dict(p) for p in options["capacity_provider_strategy"]
        ]
    if "subnets" in options:
        network: dict[str, Any] = {"subnets": list(options["subnets"])}
        if "security_groups" in options:
            network["securityGroups"] = list(options["security_groups"])
        if "assign_public_ip" in options:
            network["assignPublicIp"] = "ENABLED" if options["assign_public_ip"] else "DISABLED"
        request["networkConfiguration"] = {"awsvpcConfiguration": network}
    for key, name in (
        ("platform_version", "platformVersion"),
        ("propagate_tags", "propagateTags"),
        ("group", "group"),
    ):
        if key in options:
            request[name] = options[key]
    return request


class EcsDispatcher:
    """``client``: a boto3 ECS client of the ticker's region; ``region``, ``account`` and
    ``partition`` make a task definition's ARN for the messages and its cache key."""

    def __init__(self, client: Any, *, region: str, account: str, partition: str = "aws") -> None:
        self._client = client
        self._arn_prefix = f"arn:{partition}:ecs:{region}:{account}:"
        self._containers: dict[str, str] = {}
        self._lock = threading.Lock()

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> str:
        where = f"ECS RunTask {target.name}"
        request = self.request(target, firing_id, payload)
        try:
            answer = self._client.run_task(**request)
        except ClientError as exc:
            if not _lost(exc):
                raise DispatchError(f"{where} failed - {describe_aws_error(exc)}") from exc
            return self._after_lost(request, where, exc)
        except BotoCoreError as exc:
            return self._after_lost(request, where, exc)
        return _task_arn(answer, where)

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        """StopTask of the firing's task (found by its ``startedBy``, as a lost answer's is);
        none found running is nothing to stop."""
        cluster, _ = split_target(target.name)
        where = f"ECS StopTask {target.name} (firing {firing_id})"
        try:
            listed = self._client.list_tasks(cluster=cluster, startedBy=started_by(firing_id))
            tasks = listed.get("taskArns") or []
            if not tasks:
                return f"no task of firing {firing_id} runs in {cluster}: nothing to stop"
            self._client.stop_task(cluster=cluster, task=tasks[0], reason=reason[:255])
        except (ClientError, BotoCoreError) as exc:
            raise DispatchError(f"{where} failed - {describe_aws_error(exc)}") from exc
        return str(tasks[0])

    def request(self, target: Target, run_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The RunTask parameters of a run: DispatchError when its overrides do not fit."""
        cluster, definition = split_target(target.name)
        options = target.options
        container = options.get("container") or self.essential_container(cluster, definition)
        overrides = {
            "containerOverrides": [container_override(container, options, run_id, payload)]
        }
        size = overrides_size(overrides)
        if size > OVERRIDES_LIMIT:
            raise DispatchError(
                f"ECS RunTask {target.name}: the firing's overrides take {size} characters, over "
                f"ECS's {OVERRIDES_LIMIT} (the payload rides in {PAYLOAD_VARIABLE}): make its "
                "parameters smaller"
            )
        return {
            "cluster": cluster,
            "taskDefinition": definition,
            "count": 1,
            **placement(options),
            "overrides": overrides,
            "startedBy": started_by(run_id),
            "tags": run_tags(run_id),
            "clientToken": client_token(run_id),
        }

    def essential_container(self, cluster: str, definition: str) -> str:
        """The name of ``definition``'s first essential container (read once, then cached)."""
        key = definition if definition.startswith("arn:") else self._arn_prefix + definition
        with self._lock:
            found = self._containers.get(key)
        if found is not None:
            return found
        where = f"ECS DescribeTaskDefinition {definition} (cluster {cluster})"
        try:
            answer = self._client.describe_task_definition(taskDefinition=definition)
        except (ClientError, BotoCoreError) as exc:
            raise DispatchError(f"{where} failed - {describe_aws_error(exc)}") from exc
        containers = answer.get("taskDefinition", {}).get("containerDefinitions", [])
        names = [c.get("name") for c in containers if c.get("essential", True) and c.get("name")]
        if not names:
            raise DispatchError(f"{where}: no essential container to give the firing to")
        with self._lock:
            self._containers[key] = str(names[0])
        return str(names[0])

    def _after_lost(self, request: Mapping[str, Any], where: str, lost: Exception) -> str:
        """RunTask's answer was lost: the task it started, else RunTask again with its token."""
        found = self._started(request["cluster"], request["startedBy"])
        if found:
            return f"{found} (found started)"
        try:
            answer = self._client.run_task(**request)
        except ClientError as exc:
            conflict = _conflicting_task(exc)
            if conflict:
                return f"{conflict} (found started)"
            raise DispatchError(_twice(where, lost, exc)) from exc
        except BotoCoreError as exc:
            raise DispatchError(_twice(where, lost, exc)) from exc
        return _task_arn(answer, where)

    def _started(self, cluster: str, started: str) -> str | None:
        """The task ARN ListTasks gives for ``started``: by ``startedBy`` alone (running: ECS's
        docs say a ``startedBy`` filter must be the only one), then with the stopped ones (a
        refusal of that pair is not the end); None when it lists none or cannot answer
        (RunTask's client token still holds the second try)."""
        for filters in ({}, {"desiredStatus": "STOPPED"}):
            try:
                answer = self._client.list_tasks(cluster=cluster, startedBy=started, **filters)
            except (ClientError, BotoCoreError):
                continue
            arns = answer.get("taskArns") or []
            if arns:
                return str(arns[0])
        return None


def _lost(exc: ClientError) -> bool:
    """A 5xx: ECS may have started the task before it failed to answer."""
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return isinstance(status, int) and status >= 500


def _conflicting_task(exc: ClientError) -> str | None:
    """ConflictException names the task the same client token started already."""
    if exc.response.get("Error", {}).get("Code") != "ConflictException":
        return None
    ids: object = exc.response.get("resourceIds")
    return str(ids[0]) if isinstance(ids, list) and ids else None


def _twice(where: str, lost: Exception, again: Exception) -> str:
    return (
        f"{where} failed - {describe_aws_error(lost)}; no task of it listed, and again with its "
        f"client token - {describe_aws_error(again)}"
    )


def _task_arn(answer: Mapping[str, Any], where: str) -> str:
    tasks = answer.get("tasks") or []
    if tasks and tasks[0].get("taskArn"):
        return str(tasks[0]["taskArn"])
    failures = answer.get("failures") or []
    if failures:
        first = failures[0]
        said = ": ".join(str(first.get(k)) for k in ("reason", "detail") if first.get(k))
        arn = f" ({first['arn']})" if first.get("arn") else ""
        more = f" and {len(failures) - 1} more" if len(failures) > 1 else ""
        raise DispatchError(f"{where} started no task - {said or 'a failure'}{arn}{more}")
    raise DispatchError(f"{where} answered no task and no failure")
