"""Compaction runs: a job of record for every compaction done in the background.

``request_compaction`` writes a ``CompactionRun`` and enqueues the ``compact_thread`` task
with the run's id as the task id once the transaction commits. A thread has at most one
open (queued or running) run: a second request while one is open gets that one, which a
unique constraint decides, not a read; so two triggers of one thread give one compaction.
An open run silent for ``LOST_AFTER`` (its worker lost) is closed as failed when the next
request comes, and a new one starts.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery.exceptions import Retry
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.exceptions import CompactionRunNotFound, ThreadNotFound
from cogitator_memory.items.models import OPEN_RUN_STATUSES, RunStatus
from cogitator_memory.items.runs import public_error
from cogitator_memory.jsondata import storable_text
from cogitator_memory.llm.registry import require_summarizer
from cogitator_memory.scope import Scope
from cogitator_memory.threads.models import Thread

logger = logging.getLogger(__name__)

__all__ = ["LOST_AFTER", "CompactionRecorder", "get_compaction_run", "request_compaction"]

LOST_AFTER = timedelta(hours=1)
ENQUEUE_FAILED = "The task queue did not take the run; ask again."
LOST = "No sign of the run for an hour: its worker was lost."


def request_compaction(
    thread_id: str, *, scope: Scope | None = None, forced: bool = True
) -> tuple[CompactionRun, bool]:
    """Compact the thread in the background, or join the run already open for it.
    Returns ``(run, created)``. ``forced`` compacts whatever the thread's size (a request
    through the API); else only past the configured threshold. Raises ``ThreadNotFound``
    for a thread the caller cannot see, ``NoGrant``, and ``LLMUnavailable`` when no model
    is configured."""
    require_summarizer("Compaction")
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
                run = CompactionRun.objects.create(thread=thread, forced=forced)
        except IntegrityError:
            # Another request opened one between the read and the insert.
            joined = _open_run(thread)
            if joined is None:
                raise
            return joined, False
        transaction.on_commit(lambda: _enqueue(run.pk, thread.pk))
    return run, True


def _open_run(thread: Thread) -> CompactionRun | None:
    run = CompactionRun.objects.filter(thread=thread, status__in=OPEN_RUN_STATUSES).first()
    if run is not None and run.updated_at < timezone.now() - LOST_AFTER:
        CompactionRecorder(run.pk).failed(LOST)
        return None
    return run


def _enqueue(run_id: str, thread_id: str) -> None:
    from cogitator_memory.tasks.compaction import compact_thread

    try:
        compact_thread.apply_async(args=(thread_id,), kwargs={"run_id": run_id}, task_id=run_id)
    except Exception as exc:
        if compact_thread.app.conf.task_always_eager is True:
            cause = exc.exc if isinstance(exc, Retry) and exc.exc is not None else exc
            logger.warning("Compaction run %s failed: %s", run_id, cause)
            CompactionRecorder(run_id).failed(public_error(cause))
        else:
            logger.exception("Could not enqueue compaction run %s.", run_id)
            CompactionRecorder(run_id).failed(ENQUEUE_FAILED)


def get_compaction_run(run_id: str, *, scope: Scope | None = None) -> CompactionRun:
    """The run if the caller may see its thread; ``CompactionRunNotFound`` otherwise."""
    runs = CompactionRun.objects.select_related("thread")
    if scope is not None:
        runs = runs.filter(thread__in=Thread.objects.visible_to(scope))
    run = runs.filter(pk=run_id).first() if storable_text(run_id) else None
    if run is None:
        raise CompactionRunNotFound(str(run_id))
    return run


class CompactionRecorder:
    """Writes what the task does onto its run; with no run it does nothing."""

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id

    def _update(self, *, only_open: bool = True, **fields: object) -> None:
        if self.run_id is None:
            return
        runs = CompactionRun.objects.filter(pk=self.run_id)
        if only_open:
            runs = runs.filter(status__in=OPEN_RUN_STATUSES)
        runs.update(updated_at=timezone.now(), **fields)

    def is_finished(self) -> bool:
        """Whether the run is done or failed already (a redelivered task then does
        nothing)."""
        if self.run_id is None:
            return False
        return (
            CompactionRun.objects.filter(pk=self.run_id)
            .exclude(status__in=OPEN_RUN_STATUSES)
            .exists()
        )

    def forced(self) -> bool:
        if self.run_id is None:
            return False
        return bool(
            CompactionRun.objects.filter(pk=self.run_id).values_list("forced", flat=True).first()
        )

    def started(self, attempt: int) -> None:
        self._update(
            status=RunStatus.RUNNING,
            attempts=attempt,
            started_at=Coalesce(F("started_at"), Value(timezone.now())),
        )

    def retrying(self, exc: BaseException) -> None:
        self._update(error=public_error(exc))

    def done(self, entry_id: str | None) -> None:
        self._update(
            status=RunStatus.DONE,
            compaction_entry_id=entry_id or "",
            error="",
            finished_at=timezone.now(),
        )

    def failed(self, error: str) -> None:
        self._update(status=RunStatus.FAILED, error=error, finished_at=timezone.now())
