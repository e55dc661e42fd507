"""Extraction runs asked for through the API: a job of record per request.

``request_extraction`` checks the caller and the model, then writes an ``ExtractionRun``
and enqueues ``extract_thread_task`` with the run's id as the task id once the
transaction commits. A thread has at most one open (queued or running) run: a second
request while one is open gets that one (a unique constraint decides, not a read). The
task reports on the row (``RunRecorder``): started, windows done of the total, what it
did, or the error a client may read. An open run silent for ``LOST_AFTER`` (a worker
lost with its task) is closed as failed when the next request comes, and a new one
starts.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from celery.exceptions import Retry
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Case, F, TextField, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.exceptions import (
    CogitatorMemoryError,
    ExtractionRunNotFound,
    ServiceFailed,
    ThreadNotFound,
)
from cogitator_memory.items.models import OPEN_RUN_STATUSES, ExtractionRun, RunStatus
from cogitator_memory.items.thread_extraction import ThreadExtraction
from cogitator_memory.jsondata import storable_text
from cogitator_memory.llm.registry import require_summarizer
from cogitator_memory.scope import Scope
from cogitator_memory.threads.models import Thread

logger = logging.getLogger(__name__)

__all__ = ["LOST_AFTER", "RunRecorder", "get_run", "request_extraction"]

# Longer than the task's longest wait between two tries (10 minutes) and than one window.
LOST_AFTER = timedelta(hours=1)
ENQUEUE_FAILED = "The task queue did not take the run; ask again."
LOST = "No sign of the run for an hour: its worker was lost."


def request_extraction(thread_id: str, *, scope: Scope | None = None) -> tuple[ExtractionRun, bool]:
    """Extract the thread's unread windows in the background, or join the run already
    open for it. Returns ``(run, created)``. Raises ``ThreadNotFound`` for a thread the
    caller cannot see, ``NoGrant``, and ``LLMUnavailable`` when no model is configured."""
    require_summarizer("Extraction of memory items")
    with transaction.atomic():
        threads = Thread.objects.all() if scope is None else Thread.objects.visible_to(scope)
        thread = (
            threads.select_for_update().filter(pk=thread_id).first()
            if storable_text(thread_id)
            else None
        )
        if thread is None:
            raise ThreadNotFound(str(thread_id))
        policy.require_write(scope, thread.agent_id, thread.user_id)
        open_run = _open_run(thread)
        if open_run is not None:
            return open_run, False
        try:
            with transaction.atomic():
                run = ExtractionRun.objects.create(thread=thread)
        except IntegrityError:
            # Another request opened one between the read and the insert (SQLite has no
            # row lock to wait on); theirs is the run.
            joined = _open_run(thread)
            if joined is None:
                raise
            return joined, False
        transaction.on_commit(lambda: _enqueue(run.pk, thread.pk))
    return run, True


def _open_run(thread: Thread) -> ExtractionRun | None:
    run = ExtractionRun.objects.filter(thread=thread, status__in=OPEN_RUN_STATUSES).first()
    if run is not None and run.updated_at < timezone.now() - LOST_AFTER:
        RunRecorder(run.pk).failed(LOST)
        return None
    return run


def _enqueue(run_id: str, thread_id: str) -> None:
    # Imported here: the tasks layer stands on this one, not the other way round.
    from cogitator_memory.tasks.extraction import extract_thread_task

    try:
        extract_thread_task.apply_async(
            args=(thread_id,), kwargs={"run_id": run_id}, task_id=run_id
        )
    except Exception as exc:
        if extract_thread_task.app.conf.task_always_eager is True:
            # Run in this process (no broker): the task's own failure, and no queue to try
            # it again through (a retry of an eager task raises ``Retry`` holding it).
            # The task wrote the error it met; Retry holds only a pickled copy of it.
            cause = exc.exc if isinstance(exc, Retry) and exc.exc is not None else exc
            logger.warning("Extraction run %s failed: %s", run_id, cause)
            RunRecorder(run_id).failed(public_error(cause), unless_recorded=True)
        else:
            # The broker is down or refused: the run says so rather than staying queued.
            logger.exception("Could not enqueue extraction run %s.", run_id)
            RunRecorder(run_id).failed(ENQUEUE_FAILED)


def get_run(run_id: str, *, scope: Scope | None = None) -> ExtractionRun:
    """The run if the caller may see its thread; ``ExtractionRunNotFound`` otherwise."""
    runs = ExtractionRun.objects.select_related("thread")
    if scope is not None:
        runs = runs.filter(thread__in=Thread.objects.visible_to(scope))
    run = runs.filter(pk=run_id).first() if storable_text(run_id) else None
    if run is None:
        raise ExtractionRunNotFound(str(run_id))
    return run


def public_error(exc: BaseException) -> str:
    """What a client may read of a failure: the provider's own answer stays in the log."""
    if isinstance(exc, ServiceFailed):
        return f"{exc.code}: {exc.public_message}"
    if isinstance(exc, CogitatorMemoryError):
        return f"{exc.code}: {exc.message}"
    if isinstance(exc, OperationalError):
        return "The database was busy; the run is tried again."
    return "The run failed; the server's log tells why."


class RunRecorder:
    """Writes what a task does onto its run; with no run (a debounced extraction, the
    command), it does nothing. Each report is one UPDATE of the row."""

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id

    def _update(self, **fields: object) -> None:
        if self.run_id is not None:
            ExtractionRun.objects.filter(pk=self.run_id).update(updated_at=timezone.now(), **fields)

    def started(self, attempt: int) -> None:
        # A redelivered or retried task keeps the first start.
        self._update(
            status=RunStatus.RUNNING,
            attempts=attempt,
            started_at=Coalesce(F("started_at"), Value(timezone.now())),
        )

    def progress(self, done: int, total: int) -> None:
        self._update(windows_done=done, windows_total=total)

    def retrying(self, exc: BaseException) -> None:
        self._update(error=public_error(exc))

    def done(self, result: ThreadExtraction) -> None:
        self._update(
            status=RunStatus.DONE,
            windows_done=result.windows,
            windows_total=result.windows,
            windows_skipped=result.skipped,
            calls=result.calls,
            items_written=result.items,
            error="",
            finished_at=timezone.now(),
        )

    def failed(self, error: str, *, unless_recorded: bool = False) -> None:
        """Close the run as failed with ``error``; ``unless_recorded``: keep the error
        the task wrote, if it wrote one."""
        text: Any = Value(error)
        if unless_recorded:
            text = Case(
                When(error="", then=Value(error)), default=F("error"), output_field=TextField()
            )
        self._update(status=RunStatus.FAILED, error=text, finished_at=timezone.now())
