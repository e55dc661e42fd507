"""Jobs of record: a row for every piece of background work.

A job of record (``JobRecord``: status, attempts, last error, times, a lease) is one piece
of work; a run (``JobRun``, made concrete by ``ExtractionRun`` and ``CompactionRun``) is
one job on one thread, and a job over something else (``cascade.models.ForgetRun``,
``embeddings.models.PendingVector``) builds on ``JobRecord`` directly. The row is the
truth, the broker only a wake-up call:

- The row is written in the transaction that makes the work due, and its task is
  published once that commits (``publish_on_commit``), with the row's id as an argument.
  A broker that is down then is logged, never raised: the row stays queued and the
  sweeper (``sweep``, run by Celery beat) publishes it again.
- A worker claims the row before it works (``claim``): ``SELECT ... FOR UPDATE SKIP
  LOCKED`` on PostgreSQL, and an UPDATE that only a queued row (or one whose lease ran
  out) matches, so two workers never run one job, on SQLite too. The claim counts an
  attempt and gives a lease (``JOBS["LEASE_SECONDS"]``), renewed by each report of the
  task; a job past its lease had its worker lost, and the sweeper publishes it again.
- The task finishes the row in the transaction that writes its outputs where it can, so a
  redelivered message finds it done and does nothing.
- An error worth another try puts the row back in the queue after a backoff
  (``JobRecorder.retry_later``); after ``JOBS["MAX_ATTEMPTS"]`` attempts (a worker lost
  each time counts too) the job is dead: the admin shows it with its error and a retry
  action (``retry_jobs``).

A thread has at most one queued and one running run of a kind (unique constraints,
``run_constraints``): a request while one is queued joins it; one while a run is running
queues the next, which waits for the running one (its claim meets the constraint and is
put off). Debounced work (extraction after new turns) is a queued run whose
``run_after`` lies ahead: the turns of a burst join it.

A run goes whole with its thread (its key cascades). While the thread stays, a run that
names an entry which goes is kept in step by ``RunsOnEntries`` (a ``dependents.Dependent``
each run model registers in ``AppConfig.ready``): a field holding the entry's id is
emptied, and an error text naming it has the id replaced by the redaction marker.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from celery import current_app
from celery.exceptions import Retry
from django.db import IntegrityError, OperationalError, models, transaction
from django.db.models import Case, F, Q, TextField, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from cogitator_memory import policy
from cogitator_memory.background import Work, task_for
from cogitator_memory.conf import memory_settings
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

logger = logging.getLogger(__name__)

__all__ = [
    "CLOSED_RUN_STATUSES",
    "OPEN_RUN_STATUSES",
    "RETRYABLE_STATUSES",
    "JobKind",
    "JobRecord",
    "JobRecorder",
    "JobRun",
    "RunStatus",
    "RunsOnEntries",
    "claim",
    "due_jobs",
    "get_visible_run",
    "job_kinds",
    "public_error",
    "publish",
    "publish_on_commit",
    "register_kind",
    "request_run",
    "retry_jobs",
    "run_constraints",
    "run_job",
    "status_known",
    "sweep",
    "tasks_run_eagerly",
]

LOST = "Its worker was lost while it ran."
# A queued run whose thread has a run running waits this long before its claim is tried
# again.
BUSY_WAIT = timedelta(seconds=5)


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")
    # Tried JOBS["MAX_ATTEMPTS"] times: left for a person to look at and retry.
    DEAD = "dead", _("dead")


# A job of these statuses still has work to do.
OPEN_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)
CLOSED_RUN_STATUSES = (RunStatus.DONE, RunStatus.FAILED, RunStatus.DEAD)
# What the admin's retry action takes back into the queue.
RETRYABLE_STATUSES = (RunStatus.FAILED, RunStatus.DEAD)


@dataclass(frozen=True)
class JobSettings:
    max_attempts: int
    lease: timedelta
    retry_delay: timedelta
    retry_factor: float
    republish_after: timedelta


def job_settings() -> JobSettings:
    config = memory_settings.JOBS
    return JobSettings(
        max_attempts=int(config["MAX_ATTEMPTS"]),
        lease=timedelta(seconds=float(config["LEASE_SECONDS"])),
        retry_delay=timedelta(seconds=float(config["RETRY_DELAY_SECONDS"])),
        retry_factor=float(config["RETRY_FACTOR"]),
        republish_after=timedelta(seconds=float(config["REPUBLISH_AFTER_SECONDS"])),
    )


def retry_delay(attempts: int) -> timedelta:
    """How long a job waits after its ``attempts``-th try failed: RETRY_DELAY_SECONDS,
    RETRY_FACTOR times longer after each further try, with a tenth of jitter so jobs
    that failed together do not all come back at once."""
    config = job_settings()
    seconds = config.retry_delay.total_seconds() * config.retry_factor ** max(0, attempts - 1)
    seconds = min(seconds, 24 * 3600.0)
    return timedelta(seconds=seconds * random.uniform(1.0, 1.1))


def tasks_run_eagerly() -> bool:
    """Whether tasks run in the process that sends them (no broker: the demo, tests)."""
    return current_app.conf.task_always_eager is True


def status_known(prefix: str) -> models.CheckConstraint:
    """A job table's constraint, named after ``prefix``: its status is a known one."""
    return models.CheckConstraint(
        condition=models.Q(status__in=[choice.value for choice in RunStatus]),
        name=f"{prefix}_status_known",
    )


def run_constraints(prefix: str) -> list[models.BaseConstraint]:
    """A run table's constraints, named after ``prefix``: its status is a known one, and
    a thread has at most one queued and one running run."""
    return [
        status_known(prefix),
        # The database, not a read-then-write, keeps a thread to one queued run (which
        # requests join) and one running run (a claim of the next waits for it).
        models.UniqueConstraint(
            fields=["thread"],
            condition=models.Q(status=RunStatus.QUEUED),
            name=f"{prefix}_one_queued",
        ),
        models.UniqueConstraint(
            fields=["thread"],
            condition=models.Q(status=RunStatus.RUNNING),
            name=f"{prefix}_one_running",
        ),
    ]


def due_index(prefix: str) -> models.Index:
    """The index the sweeper reads a job table through: its open rows by due time."""
    return models.Index(
        fields=["run_after"],
        condition=models.Q(status__in=[status.value for status in OPEN_RUN_STATUSES]),
        name=f"{prefix}_due",
    )


class JobRecord(models.Model):
    """The fields every job of record has: status, attempts, last error, times and a
    lease. A concrete job adds its id (with its own prefix), what it reports, its
    constraints and ``due_index`` in its ``Meta``, and registers a ``JobKind``."""

    status = models.CharField(
        _("status"), max_length=8, choices=RunStatus.choices, default=RunStatus.QUEUED
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    error = models.TextField(_("last error"), blank=True, default="")
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    # Touched by every step of the task.
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now, editable=False)
    run_after = models.DateTimeField(
        _("run after"),
        default=timezone.now,
        help_text=_("Not claimed before this moment (a debounce, or the backoff of a retry)."),
    )
    lease_until = models.DateTimeField(
        _("lease until"),
        null=True,
        blank=True,
        help_text=_("A running job's worker holds it until then; past it, it was lost."),
    )
    published_at = models.DateTimeField(
        _("published at"),
        null=True,
        blank=True,
        help_text=_("When its task was last sent to the broker."),
    )

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.pk} ({self.status})"


class JobRun(JobRecord):
    """A job of record on one thread (it goes with the thread). A concrete run adds
    ``run_constraints`` in its ``Meta``: a thread has at most one queued and one running
    run of a kind."""

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


@dataclass(frozen=True)
class JobKind:
    """How to wake a worker for a job of ``model``: the task of ``work``, with the
    positional arguments ``args(job)`` and ``run_id=job.pk``. With ``batch``, the task
    takes the ids of many jobs at once (``args`` then gets the list)."""

    model: type[JobRecord]
    work: Work
    args: Callable[[Any], tuple[Any, ...]] = lambda job: ()
    batch: int = 0


_kinds: dict[type[JobRecord], JobKind] = {}


def register_kind(kind: JobKind) -> None:
    """Make ``kind`` the way jobs of its model are published (again replaces)."""
    _kinds[kind.model] = kind


def job_kinds() -> list[JobKind]:
    return list(_kinds.values())


def _kind_of(model: type[JobRecord]) -> JobKind:
    try:
        return _kinds[model]
    except KeyError:
        raise LookupError(f"No job kind is registered for {model.__name__}.") from None


def publish(model: type[JobRecord], job_ids: Sequence[Any]) -> bool:
    """Send the task of these jobs to the broker (to run when the first is due). A
    broker that refuses is logged, not raised: the jobs stay queued and the sweeper
    sends them again. Returns whether the broker took them. Run eagerly (no broker),
    the task runs here and now and what stops it is written on its job."""
    kind = _kind_of(model)
    ids = list(job_ids)
    if not ids:
        return True
    jobs = list(model._default_manager.filter(pk__in=ids, status__in=OPEN_RUN_STATUSES))
    if not jobs:
        return True
    task = task_for(kind.work)
    now = timezone.now()
    wait = max(0.0, (min(job.run_after for job in jobs) - now).total_seconds())
    eager = tasks_run_eagerly()
    try:
        if kind.batch:
            task.apply_async(args=(*kind.args([job.pk for job in jobs]),), countdown=wait or None)
        else:
            for job in jobs:
                task.apply_async(
                    args=kind.args(job),
                    kwargs={"run_id": job.pk},
                    countdown=max(0.0, (job.run_after - now).total_seconds()) or None,
                )
    except Exception as exc:
        label = str(model._meta.verbose_name)
        if eager:
            # Run in this process (no broker): the task's own failure, and no queue to try
            # it again through. The task wrote the error it met; Retry holds a copy.
            cause = exc.exc if isinstance(exc, Retry) and exc.exc is not None else exc
            logger.warning("%s %s failed: %s", capfirst(label), ids[0], cause)
            model._default_manager.filter(pk__in=ids, status__in=OPEN_RUN_STATUSES).update(
                status=RunStatus.FAILED,
                error=Case(
                    When(error="", then=Value(public_error(cause))),
                    default=F("error"),
                    output_field=TextField(),
                ),
                finished_at=timezone.now(),
                lease_until=None,
                updated_at=timezone.now(),
            )
            return False
        logger.warning(
            "Could not publish %d %s (%s); the sweeper publishes again what is still queued.",
            len(jobs),
            label,
            exc,
        )
        return False
    if not eager:
        model._default_manager.filter(
            pk__in=[job.pk for job in jobs], status__in=OPEN_RUN_STATUSES
        ).update(published_at=now)
    return True


def publish_on_commit(model: type[JobRecord], job_ids: Sequence[Any]) -> None:
    """``publish`` these jobs once the open transaction commits (right away without one)."""
    ids = list(job_ids)

    def send() -> None:
        try:
            publish(model, ids)
        except Exception:  # the change committed; the sweeper finishes the job
            logger.exception("Could not publish %s %s.", model._meta.verbose_name, ids)

    transaction.on_commit(send)


def claim(model: type[RecordT], job_id: Any) -> RecordT | None:
    """Take the job for this worker: mark it running, count an attempt, give it a lease.
    Returns the job, or None when there is nothing to run: it is closed or gone, another
    worker holds it, it is not due yet, another run of its thread is running (it is
    published again for later), or it ran out of attempts (it is dead then)."""
    config = job_settings()
    now = timezone.now()
    eager = tasks_run_eagerly()
    manager = model._default_manager
    with transaction.atomic():
        job = (
            manager.select_for_update(skip_locked=True)
            .filter(pk=job_id, status__in=OPEN_RUN_STATUSES)
            .first()
        )
        if job is None:
            return None
        held = job.status == RunStatus.RUNNING and (
            job.lease_until is None or job.lease_until > now
        )
        if held:
            return None
        if job.run_after > now and not eager:
            # Sent early (a clock ahead of this one, the sweeper): the message that
            # wakes it when due is sent again.
            publish_on_commit(model, [job.pk])
            return None
        if job.attempts >= config.max_attempts:
            error = job.error or LOST
            _close(manager.filter(pk=job.pk), RunStatus.DEAD, _gave_up(job.attempts, error))
            logger.warning("%s %s is dead: %s", capfirst(model._meta.verbose_name), job.pk, error)
            return None
        # Only a queued row, or a running one whose lease ran out, is taken: on SQLite
        # (no row locks) the UPDATE decides between two workers.
        takeable = Q(status=RunStatus.QUEUED) | Q(status=RunStatus.RUNNING, lease_until__lte=now)
        try:
            with transaction.atomic():
                taken = manager.filter(takeable, pk=job.pk).update(
                    status=RunStatus.RUNNING,
                    attempts=F("attempts") + 1,
                    lease_until=now + config.lease,
                    started_at=Coalesce(F("started_at"), Value(now)),
                    updated_at=now,
                )
        except IntegrityError:
            # Another run of its thread is running: this one waits for it (run eagerly,
            # for the next request of the thread, which publishes it again).
            manager.filter(pk=job.pk).update(run_after=now + BUSY_WAIT, updated_at=now)
            if not eager:
                publish_on_commit(model, [job.pk])
            return None
        if not taken:
            return None
    return manager.filter(pk=job.pk).first()


def _gave_up(attempts: int, error: str) -> str:
    return f"Given up after {attempts} attempts. {error}"


def _close(rows: models.QuerySet[Any], status: str, error: str) -> int:
    now = timezone.now()
    return rows.update(
        status=status, error=error, finished_at=now, lease_until=None, updated_at=now
    )


def run_job(
    recorder_class: type[JobRecorder[RecordT]],
    run_id: Any,
    work: Callable[[RecordT, JobRecorder[RecordT]], Any],
    *,
    retry_on: tuple[type[BaseException], ...],
) -> Any:
    """What a task of a job does: claim the job, do ``work(job, recorder)``, and on an
    error of ``retry_on`` put it back in the queue for a later try (or dead, after the
    last); another error fails it and is raised. Returns what ``work`` returns, or None
    when there was nothing to run. ``work`` closes the job (``finished``), in the
    transaction that writes its outputs where it can."""
    job = claim(recorder_class.model, run_id)
    if job is None:
        return None
    recorder = recorder_class(run_id)
    try:
        return work(job, recorder)
    except retry_on as exc:
        recorder.retry_later(exc)
        return None
    except Exception as exc:
        recorder.failed(public_error(exc))
        raise


def request_run(
    recorder: type[JobRecorder[RunT]],
    thread_id: str,
    *,
    grants: Grants | None,
    delay: timedelta | None = None,
    **fields: Any,
) -> tuple[RunT, bool]:
    """Queue a run of the recorder's model (with ``fields``) for the thread, or join the
    run queued for it. A new run is published once the transaction commits, to be
    claimed after ``delay`` (a debounce: what comes meanwhile joins it). Returns ``(run,
    created)``. Raises ``ThreadNotFound`` for a thread the caller cannot see and
    ``NoGrant`` for one they may not write to."""
    now = timezone.now()
    run_after = now if delay is None or tasks_run_eagerly() else now + delay
    model = recorder.model
    with transaction.atomic():
        thread = visible_thread(thread_id, grants, lock=True)
        policy.require_write(grants, thread.agent_id, thread.user_id)
        queued = _queued_run(model, thread)
        if queued is not None:
            if _stalled(queued, now):
                # Its message may be lost (or, run eagerly, it waited for a running one).
                publish_on_commit(model, [queued.pk])
            return queued, False
        try:
            with transaction.atomic():
                run = model._default_manager.create(thread=thread, run_after=run_after, **fields)
        except IntegrityError:
            # Another request queued one between the read and the insert (SQLite has no
            # row lock to wait on); theirs is the run.
            joined = _queued_run(model, thread)
            if joined is None:
                raise
            return joined, False
        publish_on_commit(model, [run.pk])
    return run, True


def _stalled(job: JobRecord, now: datetime) -> bool:
    """Whether a queued job is due and was not published within REPUBLISH_AFTER_SECONDS."""
    if job.run_after > now:
        return False
    return job.published_at is None or job.published_at <= now - job_settings().republish_after


def _queued_run(model: type[RunT], thread: Thread) -> RunT | None:
    return model._default_manager.filter(thread=thread, status=RunStatus.QUEUED).first()


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
    """Writes what a task does onto its job of ``model``; with no job (work not asked
    for through a job), it does nothing. Each report is one UPDATE of the row, and a
    report of a running job renews its lease. Reports reach an open job only, so that
    nothing reopens a closed one (a redelivered task's)."""

    model: type[RecordT]

    def __init__(self, run_id: str | None) -> None:
        self.run_id = run_id

    def _rows(self) -> models.QuerySet[RecordT]:
        return self.model._default_manager.filter(pk=self.run_id, status__in=OPEN_RUN_STATUSES)

    def _update(self, **fields: object) -> None:
        if self.run_id is None:
            return
        now = timezone.now()
        self._rows().update(updated_at=now, lease_until=now + job_settings().lease, **fields)

    def started(self, attempt: int) -> None:
        """Mark the job running (a task run without ``claim``: the command's)."""
        self._update(
            status=RunStatus.RUNNING,
            attempts=attempt,
            started_at=Coalesce(F("started_at"), Value(timezone.now())),
        )

    def retrying(self, exc: BaseException) -> None:
        self._update(error=public_error(exc))

    def finished(self, **fields: object) -> None:
        """Close the job as done, with what it did in ``fields``."""
        if self.run_id is None:
            return
        now = timezone.now()
        self._rows().update(
            status=RunStatus.DONE,
            error="",
            finished_at=now,
            updated_at=now,
            lease_until=None,
            **fields,
        )

    def failed(self, error: str, *, unless_recorded: bool = False) -> None:
        """Close the job as failed with ``error``; ``unless_recorded``: keep the error
        the task wrote, if it wrote one."""
        if self.run_id is None:
            return
        text: Any = Value(error)
        if unless_recorded:
            text = Case(
                When(error="", then=Value(error)), default=F("error"), output_field=TextField()
            )
        now = timezone.now()
        self._rows().update(
            status=RunStatus.FAILED, error=text, finished_at=now, updated_at=now, lease_until=None
        )

    def retry_later(self, exc: BaseException) -> None:
        """The try met an error a later try may get past: back to the queue after a
        backoff, or dead once the job had its attempts. Run eagerly, there is no queue to
        come back through: the job fails."""
        if self.run_id is None:
            raise exc
        error = public_error(exc)
        if tasks_run_eagerly():
            self.failed(error)
            return
        job = self._rows().first()
        if job is None:
            return
        if job.attempts >= job_settings().max_attempts:
            _close(self._rows(), RunStatus.DEAD, _gave_up(job.attempts, error))
            logger.warning("%s %s is dead: %s", self.model._meta.verbose_name, job.pk, error)
            return
        now = timezone.now()
        try:
            with transaction.atomic():
                self._rows().update(
                    status=RunStatus.QUEUED,
                    error=error,
                    lease_until=None,
                    run_after=now + retry_delay(job.attempts),
                    updated_at=now,
                )
        except IntegrityError:
            # A newer run of its thread is queued already: that one does the work.
            _close(self._rows(), RunStatus.FAILED, f"{error} A newer run was queued.")
            return
        publish_on_commit(self.model, [job.pk])


def due_jobs(model: type[JobRecord], now: datetime | None = None) -> models.QuerySet[Any]:
    """The open jobs of ``model`` whose worker should be woken: queued, due and not
    published within ``REPUBLISH_AFTER_SECONDS``, or running past their lease."""
    config = job_settings()
    now = now or timezone.now()
    quiet = now - config.republish_after
    waiting = Q(status=RunStatus.QUEUED, run_after__lte=now) | Q(
        status=RunStatus.RUNNING, lease_until__lte=now
    )
    return model._default_manager.filter(
        waiting, Q(published_at__isnull=True) | Q(published_at__lte=quiet)
    )


# Jobs published per sweep of one kind: one sweep stays short, the next takes the rest.
SWEEP_LIMIT = 1000


def sweep() -> dict[str, int]:
    """Publish again the jobs of every kind whose message was lost or never sent, and
    those whose worker was lost (past their lease). Returns how many per kind."""
    published: dict[str, int] = {}
    for kind in job_kinds():
        ids = list(
            due_jobs(kind.model).order_by("run_after").values_list("pk", flat=True)[:SWEEP_LIMIT]
        )
        if not ids:
            continue
        step = kind.batch or 1
        sent = 0
        for start in range(0, len(ids), step):
            chunk = ids[start : start + step]
            if kind.batch:
                if publish(kind.model, chunk):
                    sent += len(chunk)
            elif publish(kind.model, chunk):
                sent += len(chunk)
        published[str(kind.model._meta.verbose_name_plural)] = sent
    return published


def retry_jobs(model: type[JobRecord], job_ids: Iterable[Any]) -> int:
    """Queue these failed or dead jobs again with their attempts reset (the admin's
    retry action), published once the transaction commits. Returns how many."""
    ids = list(job_ids)
    now = timezone.now()
    retried = 0
    with transaction.atomic():
        rows = model._default_manager.filter(pk__in=ids, status__in=RETRYABLE_STATUSES)
        for pk in list(rows.values_list("pk", flat=True)):
            try:
                with transaction.atomic():
                    retried += model._default_manager.filter(pk=pk).update(
                        status=RunStatus.QUEUED,
                        attempts=0,
                        run_after=now,
                        lease_until=None,
                        finished_at=None,
                        published_at=None,
                        updated_at=now,
                    )
            except IntegrityError:
                # Its thread has a run queued already, which does the same work.
                continue
        publish_on_commit(model, ids)
    return retried


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
