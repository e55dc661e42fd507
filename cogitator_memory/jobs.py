"""Jobs of record: a row for each piece of background work a client may poll.

A job of record (``JobRecord``: status, tries, last error, times) is one piece of work; a
run (``JobRun``, made concrete by ``ExtractionRun`` and ``CompactionRun``) is one job on
one thread, and a job over something else (``cascade.models.ForgetRun``, forgetting a
user) builds on ``JobRecord`` directly. Its id is the Celery task's id, and the task keeps
the row's status current (``JobRecorder``), so the status does not depend on a Celery
result backend. A thread has at most one open (queued or running) run of a kind: a second
request while one is open gets that one, which a unique constraint decides, not a read
(``run_constraints``).

``request_run`` writes a run and enqueues its task once the transaction commits
(``enqueue_run``). An open run silent for ``LOST_AFTER`` (its worker lost with its task) is
closed as failed when the next request comes, and a new one starts.

A run goes whole with its thread (its key cascades). While the thread stays, a run that
names an entry which goes is kept in step by ``RunsOnEntries`` (a ``dependents.Dependent``
each run model registers in ``AppConfig.ready``): a field holding the entry's id is
emptied, and an error text naming it has the id replaced by the redaction marker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from celery.exceptions import Retry
from django.db import IntegrityError, OperationalError, models, transaction
from django.db.models import Case, F, TextField, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from cogitator_memory import policy
from cogitator_memory.dependents import Forgotten
from cogitator_memory.exceptions import (
    CogitatorMemoryError,
    NotFound,
    ServiceFailed,
)
from cogitator_memory.grants import Grants
from cogitator_memory.jsondata import storable_text
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread
from cogitator_memory.threads.selectors import visible_thread

if TYPE_CHECKING:
    from celery import Task

logger = logging.getLogger(__name__)

__all__ = [
    "ENQUEUE_FAILED",
    "LOST",
    "LOST_AFTER",
    "OPEN_RUN_STATUSES",
    "JobRecord",
    "JobRecorder",
    "JobRun",
    "RunStatus",
    "RunsOnEntries",
    "enqueue_run",
    "get_visible_run",
    "public_error",
    "request_run",
    "run_constraints",
]

# Longer than a task's longest wait between two tries (10 minutes) and than one step of it.
LOST_AFTER = timedelta(hours=1)
ENQUEUE_FAILED = "The task queue did not take the run; ask again."
LOST = "No sign of the run for an hour: its worker was lost."


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")


# A thread has at most one run of these at a time: a second request joins it.
OPEN_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)


def run_constraints(prefix: str) -> list[models.BaseConstraint]:
    """A run table's constraints, named after ``prefix``: its status is a known one, and
    a thread has at most one open run."""
    return [
        models.CheckConstraint(
            condition=models.Q(status__in=[choice.value for choice in RunStatus]),
            name=f"{prefix}_status_known",
        ),
        # The database, not a read-then-write, keeps a thread to one open run.
        models.UniqueConstraint(
            fields=["thread"],
            condition=models.Q(status__in=[status.value for status in OPEN_RUN_STATUSES]),
            name=f"{prefix}_one_open",
        ),
    ]


class JobRecord(models.Model):
    """The fields every job of record has: status, tries, last error and times. A
    concrete job adds its id (with its own prefix), what it reports, and its
    constraints in its ``Meta``."""

    status = models.CharField(
        _("status"), max_length=8, choices=RunStatus.choices, default=RunStatus.QUEUED
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    error = models.TextField(_("last error"), blank=True, default="")
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    # Touched by every step of the task: an open run silent for long is taken as lost.
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now, editable=False)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.pk} ({self.status})"


class JobRun(JobRecord):
    """A job of record on one thread (it goes with the thread). A concrete run adds
    ``run_constraints`` in its ``Meta``: a thread has at most one open run of a kind."""

    thread = models.ForeignKey(
        "cogitator_memory.Thread",
        verbose_name=_("thread"),
        on_delete=models.CASCADE,
        related_name="+",
    )

    class Meta:
        abstract = True


RecordT = TypeVar("RecordT", bound=JobRecord)
RunT = TypeVar("RunT", bound=JobRun)


def request_run(
    recorder: type[JobRecorder[RunT]],
    thread_id: str,
    *,
    grants: Grants | None,
    enqueue: Callable[[str, str], None],
    **fields: Any,
) -> tuple[RunT, bool]:
    """Open a run of the recorder's model (with ``fields``) for the thread, or join the
    run already open for it. A new run is handed to ``enqueue(run_id, thread_id)`` once
    the transaction commits. Returns ``(run, created)``. Raises ``ThreadNotFound`` for a
    thread the caller cannot see and ``NoGrant`` for one they may not write to."""
    with transaction.atomic():
        thread = visible_thread(thread_id, grants, lock=True)
        policy.require_write(grants, thread.agent_id, thread.user_id)
        open_run = _open_run(recorder, thread)
        if open_run is not None:
            return open_run, False
        try:
            with transaction.atomic():
                run = recorder.model._default_manager.create(thread=thread, **fields)
        except IntegrityError:
            # Another request opened one between the read and the insert (SQLite has no
            # row lock to wait on); theirs is the run.
            joined = _open_run(recorder, thread)
            if joined is None:
                raise
            return joined, False
        transaction.on_commit(lambda: enqueue(run.pk, thread.pk))
    return run, True


def _open_run(recorder: type[JobRecorder[RunT]], thread: Thread) -> RunT | None:
    runs = recorder.model._default_manager.filter(thread=thread, status__in=OPEN_RUN_STATUSES)
    run = runs.first()
    if run is not None and run.updated_at < timezone.now() - LOST_AFTER:
        recorder(run.pk).failed(LOST)
        return None
    return run


def enqueue_run(task: Task, recorder: JobRecorder[Any], *args: Any) -> None:
    """Send ``task`` with ``args`` (a run's thread id) and the recorder's run id as its
    task id. What stops it (the broker, or the task itself when run eagerly) is written
    on the run."""
    run_id = recorder.run_id
    label = str(recorder.model._meta.verbose_name)
    try:
        task.apply_async(args=args, kwargs={"run_id": run_id}, task_id=run_id)
    except Exception as exc:
        if task.app.conf.task_always_eager is True:
            # Run in this process (no broker): the task's own failure, and no queue to try
            # it again through (a retry of an eager task raises ``Retry`` holding it).
            # The task wrote the error it met; Retry holds only a pickled copy of it.
            cause = exc.exc if isinstance(exc, Retry) and exc.exc is not None else exc
            logger.warning("%s %s failed: %s", capfirst(label), run_id, cause)
            recorder.failed(public_error(cause), unless_recorded=True)
        else:
            # The broker is down or refused: the run says so rather than staying queued.
            logger.exception("Could not enqueue %s %s.", label, run_id)
            recorder.failed(ENQUEUE_FAILED)


def get_visible_run(
    model: type[RunT], run_id: str, *, grants: Grants | None, not_found: type[NotFound]
) -> RunT:
    """The run of ``model`` if the caller may see its thread; raises ``not_found``
    otherwise."""
    runs = model._default_manager.select_related("thread")
    if grants is not None:
        runs = runs.filter(thread__in=Thread.objects.visible_to(grants))
    run = runs.filter(pk=run_id).first() if storable_text(run_id) else None
    if run is None:
        raise not_found(str(run_id))
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


class JobRecorder(Generic[RecordT]):
    """Writes what a task does onto its run of ``model``; with no run (work not asked
    for through a request), it does nothing. Each report is one UPDATE of the row."""

    model: type[RecordT]
    # Whether reports reach an open run only, so that nothing reopens a closed one.
    only_open = False

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id

    def _update(self, **fields: object) -> None:
        if self.run_id is None:
            return
        runs = self.model._default_manager.filter(pk=self.run_id)
        if self.only_open:
            runs = runs.filter(status__in=OPEN_RUN_STATUSES)
        runs.update(updated_at=timezone.now(), **fields)

    def started(self, attempt: int) -> None:
        # A redelivered or retried task keeps the first start.
        self._update(
            status=RunStatus.RUNNING,
            attempts=attempt,
            started_at=Coalesce(F("started_at"), Value(timezone.now())),
        )

    def retrying(self, exc: BaseException) -> None:
        self._update(error=public_error(exc))

    def finished(self, **fields: object) -> None:
        """Close the run as done, with what it did in ``fields``."""
        self._update(status=RunStatus.DONE, error="", finished_at=timezone.now(), **fields)

    def failed(self, error: str, *, unless_recorded: bool = False) -> None:
        """Close the run as failed with ``error``; ``unless_recorded``: keep the error
        the task wrote, if it wrote one."""
        text: Any = Value(error)
        if unless_recorded:
            text = Case(
                When(error="", then=Value(error)), default=F("error"), output_field=TextField()
            )
        self._update(status=RunStatus.FAILED, error=text, finished_at=timezone.now())


# Entry ids per query: well under SQLite's parameter limit.
IDS_PER_QUERY = 500


class RunsOnEntries:
    """Keeps the runs of ``model`` in step with the entries they name: when entries go,
    a field of ``entry_fields`` holding one of their ids is emptied (a compaction run's
    compaction entry), and an error text naming one has the id replaced by the
    redaction marker. Runs are read by their thread (an indexed key), the threads of the
    entries that go; counted as ``runs``."""

    def __init__(self, name: str, model: type[JobRun], entry_fields: Sequence[str] = ()) -> None:
        self.name = name
        self.model = model
        self.entry_fields = tuple(entry_fields)

    @property
    def models(self) -> tuple[type[JobRun], ...]:
        return (self.model,)

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """A run is written by the request that asks for it."""

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        ids = list(entry_ids)
        runs = self.model._default_manager
        for start in range(0, len(ids), IDS_PER_QUERY):
            chunk = ids[start : start + IDS_PER_QUERY]
            # Called before the entries go, so they still name their threads.
            threads = Entry.objects.filter(pk__in=chunk).values("thread_id")
            changed: set[Any] = set()
            for field in self.entry_fields:
                named = runs.filter(thread_id__in=threads, **{f"{field}__in": chunk})
                pks = list(named.values_list("pk", flat=True))
                runs.filter(pk__in=pks).update(**{field: ""})
                changed.update(pks)
            errored = runs.filter(thread_id__in=threads).exclude(error="")
            for pk, error in errored.values_list("pk", "error"):
                cleaned = error
                for entry_id in chunk:
                    if entry_id in cleaned:
                        cleaned = cleaned.replace(entry_id, REDACTED_TEXT)
                if cleaned != error:
                    runs.filter(pk=pk).update(error=cleaned)
                    changed.add(pk)
            forgotten["runs"] += len(changed)

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        """A run names its thread, no owner."""
