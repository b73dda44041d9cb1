"""Every event the two functions take, parsed into what it asks for; EventError, saying what is
wrong, for one that asks for nothing the function does (nothing is written then).

The ticker's (:func:`.ticker.ticker_request`): a tick (``{"tick": ...}``, maybe a shard's, or an
EventBridge Scheduled Event), a manual run, a rerun of a past firing, a read or change of the
active environment, a pause or a resume, a runtime schedule's create, list, show or delete, a
backfill and its status. The parser checks the event's shape; the values an operator gives
(the job, the operator, the parameters, the environment's name, a schedule's entry, a window,
a firing id) are checked by the core, as the CLI's are.

The recorder's (:func:`.recorder.completion_from_event`):

* A Lambda destination record (``OnSuccess`` / ``OnFailure``): ``requestContext.condition`` is
  ``Success``, ``RetriesExhausted`` or ``EventAgeExceeded``; ``requestPayload`` is what the
  ticker sent, so it names the firing.
* A Step Functions "Execution Status Change" event from EventBridge: ``detail.status`` is
  SUCCEEDED, FAILED, TIMED_OUT or ABORTED, or RUNNING with ``redriveCount`` 1 or more (Step
  Functions redrove the execution: the run is reopened). The execution's input names the firing;
  when Step Functions left the input out (a large one: ``input`` null, ``inputDetails.included``
  false), the execution's name does, unless it was cut (a long job name): then the input is read
  with DescribeExecution.
* An "ECS Task State Change" event from EventBridge (source ``aws.ecs``) of a task the ticker
  started (``startedBy`` begins with ``ms-``): once ``lastStatus`` is STOPPED it closes the run
  its overridden container's ``MINI_SCHEDULER_FIRING_ID`` names, SUCCEEDED when every container
  that gave an exit code gave 0 (and none stopped with a reason and no code), else FAILED (a
  task that failed to start too). Any other ECS event is not the end of a run.

Two modules, so that the recorder function never loads the ticker's events (nor the tick); the
ticker's operator events apart (``operator.py``), loaded at the first event that is not a tick.
"""
