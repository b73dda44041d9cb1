"""ECS tasks for the local scheduler: moto starts a task and runs nothing in it, and no event
says when it stops. :class:`LocalTaskDispatcher` starts each task with the real ECS dispatcher
(on moto), and ``after`` seconds later stops it there and hands the recorder the "ECS Task State
Change" event ECS would send (:func:`task_stopped_event`): STOPPED, its containers exited 0, so
the run ends SUCCEEDED as a task's that ran well does on AWS.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from mini_scheduler.clock import Clock
from mini_scheduler.dispatch.base import Answer, Dispatcher, Dispatchers, Ended
from mini_scheduler.dispatch.ecs import split_target
from mini_scheduler.errors import describe_aws_error
from mini_scheduler.jobs import Target
from mini_scheduler.local.dispatch import BeforeCompletion, Completion, adopt_region
from mini_scheduler.local.follow import Followers
from mini_scheduler.model import iso_millis, iso_seconds

__all__ = ["LocalTaskDispatcher", "task_stopped_event"]

log = logging.getLogger("mini_scheduler.local")

STOP_REASON: Final = "Essential container in task exited"


def task_stopped_event(
    task: Mapping[str, Any], *, region: str, account: str, at: datetime
) -> dict[str, Any]:
    """The EventBridge "ECS Task State Change" event of ``task`` (DescribeTasks' entry) stopped
    at ``at``, each of its containers exited 0 (``events/ecs-task-stopped.json`` is one)."""
    arn = str(task["taskArn"])
    containers = [
        {
            "containerArn": container.get("containerArn"),
            "lastStatus": "STOPPED",
            "name": container.get("name"),
            "image": container.get("image"),
            "taskArn": arn,
            "exitCode": 0,
        }
        for container in task.get("containers") or []
    ]
    created = task.get("createdAt")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "ECS Task State Change",
        "source": "aws.ecs",
        "account": account,
        "time": iso_seconds(at),
        "region": region,
        "resources": [arn],
        "detail": {
            "clusterArn": task.get("clusterArn"),
            "containers": containers,
            "createdAt": iso_millis(created) if isinstance(created, datetime) else None,
            "desiredStatus": "STOPPED",
            "group": task.get("group"),
            "lastStatus": "STOPPED",
            "launchType": task.get("launchType"),
            "overrides": task.get("overrides") or {},
            "startedBy": task.get("startedBy"),
            "stopCode": "EssentialContainerExited",
            "stoppedReason": STOP_REASON,
            "stoppedAt": iso_millis(at),
            "taskArn": arn,
            "taskDefinitionArn": task.get("taskDefinitionArn"),
        },
    }


class LocalTaskDispatcher:
    """Starts ECS tasks through ``inner`` (the ECS dispatcher, on moto's ``client``) and, after
    ``after`` seconds, stops each and reports its STOPPED event to ``on_complete``. A task not
    stopped yet when :meth:`close` is called stays as it is (its run stays open, as a task's
    whose event never came)."""

    def __init__(
        self,
        inner: Dispatcher,
        client: Any,
        *,
        on_complete: Completion,
        clock: Clock,
        region: str,
        account: str,
        before_complete: BeforeCompletion | None = None,
        after: float = 3.0,
    ) -> None:
        self._inner = inner
        self._client = client
        self._on_complete = on_complete
        self._before = before_complete
        self._clock = clock
        self._region = region
        self._account = account
        self._after = after
        self._stops = Followers("task")
        self._closing = self._stops.closing

    def dispatch(self, target: Target, firing_id: str, payload: Mapping[str, Any]) -> Answer:
        adopt_region(self._region)
        answer = self._inner.dispatch(target, firing_id, payload)
        if isinstance(answer, Ended):
            return answer
        arn = answer.split(" ", 1)[0]
        cluster = split_target(target.name)[0]
        if not self._stops.follow(self._stop_later, cluster, arn, firing_id):
            log.warning("ECS task %s started while stopping: it is not stopped here", arn)
        return answer

    def stop(self, target: Target, firing_id: str, reason: str) -> str:
        """``overlap: cancel_other``: the task stopped now, by ``inner`` (its STOPPED event still
        comes from the simulated stop, and changes nothing: the run has ended)."""
        adopt_region(self._region)
        return Dispatchers({target.kind: self._inner}).stop(target, firing_id, reason)

    def pending(self) -> int:
        """The tasks started and not stopped yet."""
        return self._stops.pending()

    def _stop_later(self, cluster: str, arn: str, firing_id: str) -> None:
        adopt_region(self._region)
        if self._closing.wait(self._after):
            return
        try:
            self._client.stop_task(cluster=cluster, task=arn, reason=STOP_REASON)
            (task,) = self._client.describe_tasks(cluster=cluster, tasks=[arn])["tasks"]
        except (ClientError, BotoCoreError, ValueError) as exc:
            cause = describe_aws_error(exc) if not isinstance(exc, ValueError) else "not found"
            log.error("ECS task %s of firing %s cannot be stopped: %s", arn, firing_id, cause)
            return
        if self._before is not None:
            self._before(firing_id)
        event = task_stopped_event(
            task, region=self._region, account=self._account, at=self._clock.now()
        )
        try:
            self._on_complete(event)
        except Exception as exc:
            log.error("Completion of firing %s not recorded: %s", firing_id, exc)

    def close(self) -> None:
        """Stop no more tasks: those still running stay so."""
        self._stops.close()
