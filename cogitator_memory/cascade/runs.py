"""Forget runs: forgetting a user in the background, a job of record per request.

``request_forget`` checks the user id and the agents against the grants of the person who
asks, then writes a ``ForgetRun`` and, once the transaction commits, enqueues the task of
``Work.FORGET_USER`` with the run's id as its task id. A user has at most one open run: a
second request for the same agents joins it, one for other agents is refused
(``ForgetRunOpen``) until it is done. Claims, leases, retries and the dead state are
those of every job of record (``cogitator_memory.jobs``).

``run_forget`` is what the task does: it runs ``MemoryCascade.delete_user`` with the grants
of the person who asked, as they stand when it runs (a person whose grants no longer reach
the user fails the run), and keeps the run current: batches done of the total and the
report's counts after each batch, then done with all of them. ``delete_user`` goes on where
it stopped when run again, so a retried or redelivered task finishes the work; the counts
of an attempt that failed part of the way are kept and added to.

Who sees a run: the person who asked for it, and superusers. It names a user who was
forgotten; the grants that allowed it may be another's, or have changed since.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from cogitator_memory import policy
from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.background import Work
from cogitator_memory.cascade.audit import CHANGE, counts_text, log_cascade, logger
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.cascade.report import CascadeReport, sum_counts
from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.exceptions import (
    ForgetRunNotFound,
    ForgetRunOpen,
    InvalidInput,
    UserNotGranted,
)
from cogitator_memory.grants import USER_ID_MAX_LENGTH, Grants
from cogitator_memory.jobs import (
    OPEN_RUN_STATUSES,
    JobKind,
    JobRecorder,
    RunStatus,
    publish_on_commit,
    register_kind,
)
from cogitator_memory.jsondata import storable_text, text_problem

__all__ = [
    "FORGET_JOBS",
    "MAX_AGENTS",
    "NO_ONE",
    "ForgetRecorder",
    "check_agent_ids",
    "check_user_id",
    "forget_agents",
    "forget_runs_of",
    "get_forget_run",
    "register_forget_jobs",
    "request_forget",
    "run_forget",
]

# Agents one forgetting may name: each is a grant check and a batch of the run.
MAX_AGENTS = 100
AGENT_ID_MAX_LENGTH = 255
RUN_ID_MAX_LENGTH = 64
NO_ONE = "The person who asked for this run is no longer a user; ask again."


def check_user_id(user_id: object) -> str:
    """The user id, or ``InvalidInput`` on ``user_id``."""
    if (
        isinstance(user_id, str)
        and 0 < len(user_id) <= USER_ID_MAX_LENGTH
        and text_problem(user_id) is None
    ):
        return user_id
    raise InvalidInput(
        {
            "user_id": f"A user id is a non-empty text of at most {USER_ID_MAX_LENGTH} "
            "characters, without NUL."
        }
    )


def check_agent_ids(agent_ids: Iterable[object]) -> list[str]:
    """The agent ids, each once, sorted; ``InvalidInput`` on ``agent_ids`` otherwise."""
    agents = list(agent_ids) if not isinstance(agent_ids, str) else [agent_ids]
    for agent_id in agents:
        if (
            not isinstance(agent_id, str)
            or not agent_id.strip()
            or len(agent_id) > AGENT_ID_MAX_LENGTH
            or text_problem(agent_id) is not None
        ):
            raise InvalidInput(
                {
                    "agent_ids": f"An agent id is a text of 1 to {AGENT_ID_MAX_LENGTH} "
                    "characters, not only spaces, without NUL."
                }
            )
    unique = sorted({str(agent_id) for agent_id in agents})
    if not unique or len(unique) > MAX_AGENTS:
        raise InvalidInput({"agent_ids": f"Name 1 to {MAX_AGENTS} agents, or leave them out."})
    return unique


def forget_agents(
    user_id: str, agent_ids: Iterable[str] | None, grants: Grants | None
) -> list[str] | None:
    """The agents to forget ``user_id`` in: those named, each of which the grants must
    reach for the user (``NoGrant`` otherwise); by default every agent the grants reach
    for the user (``UserNotGranted`` when none does), and None (every agent) for grants
    that reach every agent."""
    user_id = check_user_id(user_id)
    if agent_ids is not None:
        agents = check_agent_ids(agent_ids)
        for agent_id in agents:
            policy.require_write(grants, agent_id, user_id, user_field="user_id")
        return agents
    if grants is None or grants.is_unrestricted:
        return None
    agents = sorted(a for a in grants.agent_ids or () if grants.allows(a, user_id))
    if not agents:
        raise UserNotGranted(user_id)
    return agents


def request_forget(
    user_id: str,
    agent_ids: Iterable[str] | None,
    *,
    grants: Grants,
    requested_by: Any,
) -> tuple[ForgetRun, bool]:
    """Forget ``user_id`` in the background (in ``agent_ids``, or every agent the grants
    reach for the user), asked for by the person ``requested_by``, or join the open run of
    the user for the same agents. Returns ``(run, created)``. Raises ``InvalidInput``,
    ``NoGrant``, ``UserNotGranted`` and ``ForgetRunOpen``."""
    agents = forget_agents(user_id, agent_ids, grants)
    with transaction.atomic():
        open_run = _open_run(user_id)
        if open_run is not None:
            if open_run.agent_ids == agents:
                return open_run, False
            raise ForgetRunOpen(user_id, open_run.pk)
        try:
            with transaction.atomic():
                run = ForgetRun.objects.create(
                    user_id=user_id, agent_ids=agents, requested_by=requested_by
                )
        except IntegrityError:
            # Another request opened one between the read and the insert.
            joined = _open_run(user_id)
            if joined is None:
                raise
            if joined.agent_ids == agents:
                return joined, False
            raise ForgetRunOpen(user_id, joined.pk) from None
        publish_on_commit(ForgetRun, [run.pk])
    return run, True


def _open_run(user_id: str) -> ForgetRun | None:
    return (
        ForgetRun.objects.select_for_update()
        .filter(user_id=user_id, status__in=OPEN_RUN_STATUSES)
        .first()
    )


FORGET_JOBS = JobKind(ForgetRun, Work.FORGET_USER)


def register_forget_jobs() -> None:
    register_kind(FORGET_JOBS)


def forget_runs_of(user: Any) -> QuerySet[ForgetRun]:
    """The forget runs ``user`` may see: those they asked for; every one for an active
    superuser; none for anyone else."""
    runs = ForgetRun.objects.all()
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return runs.none()
    if user.is_superuser:
        return runs
    return runs.filter(requested_by=user)


def get_forget_run(run_id: str, *, user: Any) -> ForgetRun:
    """The run if ``user`` may see it; ``ForgetRunNotFound`` otherwise."""
    run = (
        forget_runs_of(user).filter(pk=run_id).first()
        if isinstance(run_id, str) and storable_text(run_id) and len(run_id) <= RUN_ID_MAX_LENGTH
        else None
    )
    if run is None:
        raise ForgetRunNotFound(str(run_id))
    return run


class ForgetRecorder(JobRecorder[ForgetRun]):
    """Writes what the forget task does onto its run. A closed run stays closed: a
    redelivered task reports nothing on it."""

    model = ForgetRun

    def progress(self, done: int, total: int, counts: dict[str, Any]) -> None:
        self._update(done=done, total=total, counts=counts)

    def done(self, counts: dict[str, Any], total: int) -> None:
        self.finished(done=total, total=total, counts=counts)


def run_forget(
    run_id: str,
    *,
    attempt: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any] | None:
    """Forget the user of the run (the task's work): returns the report's counts, or
    None when there is nothing to do (no such run, a run closed already, no person to act
    for: the run then fails). Raises what the cascade raises; the task writes it on the
    run (``NoGrant`` when the person's grants no longer reach the user)."""
    run = ForgetRun.objects.filter(pk=run_id).first()
    if run is None or run.status not in OPEN_RUN_STATUSES:
        return None
    recorder = ForgetRecorder(run.pk)
    person = run.requested_by
    if person is None:
        recorder.failed(NO_ONE)
        return None
    if run.status == RunStatus.QUEUED:
        # Called without a claim (a worker's claim marks it running).
        recorder.started(attempt)
    # What earlier attempts did (each batch they finished), added to.
    before: dict[str, Any] = dict(run.counts or {})
    report = CascadeReport()

    def so_far() -> dict[str, Any]:
        counts: dict[str, Any] = sum_counts(before, report.counts())
        # Counted afresh by each attempt, not added up.
        counts["threads_out_of_reach"] = report.threads_out_of_reach
        return counts

    last = {"total": 0}

    def step(done: int, total: int) -> None:
        last["total"] = total
        recorder.progress(done, total, so_far())
        if progress is not None:
            progress(done, total)

    MemoryCascade(grants=grants_for_user(person)).delete_user(
        run.user_id, agent_ids=run.agent_ids, progress=step, report=report
    )
    counts = so_far()
    recorder.done(counts, last["total"])
    logger.info("Forget run %s done; %s.", run.pk, counts_text(counts))
    log_cascade(
        person,
        ForgetRun,
        run.pk,
        action_flag=CHANGE,
        message=f"forgot the user's memory; {counts_text(counts)}",
    )
    return counts
