"""Periodic tasks that finish what a change left to do after it committed.

``sweep_jobs_task`` wakes a worker for every job of record whose message was lost or
never sent (the broker was down when it was written) and for every job whose worker was
lost (past its lease): ``jobs.sweep``. ``sweep_outbox_task`` carries out the outbox
messages that could not be published when their change committed (a store outside the
database was down); ``prune_vectors_task`` deletes the vectors whose source went (an
entry deleted or redacted, a memory item purged: every source registered in
``embeddings/sources.py``). A project runs them with Celery beat:
``cogitator_memory.beat.BEAT_SCHEDULE`` is the schedule to merge into its
``CELERY_BEAT_SCHEDULE``.
"""

from __future__ import annotations

import logging

from celery import shared_task

from cogitator_memory import jobs
from cogitator_memory.embeddings.pruning import prune_vectors
from cogitator_memory.outbox import services as outbox

logger = logging.getLogger(__name__)

__all__ = ["prune_vectors_task", "sweep_jobs_task", "sweep_outbox_task"]


# Acknowledged before it runs: the next sweep does what a lost one did not.
@shared_task(ignore_result=True)
def sweep_jobs_task() -> dict[str, int]:
    """Publish again the jobs of record that wait with no message on its way; returns how
    many of each kind."""
    published = jobs.sweep()
    if published:
        logger.info("Jobs published again: %s", published)
    return published


@shared_task(ignore_result=True)
def sweep_outbox_task() -> dict[str, int]:
    """Carry out every due outbox message; returns how many were done and failed."""
    result = outbox.drain()
    if result.failed:
        logger.warning("%d outbox messages failed again; they are retried later.", result.failed)
    return {"done": result.done, "failed": result.failed}


@shared_task(ignore_result=True)
def prune_vectors_task() -> dict[str, int]:
    """Delete the vectors whose source is gone (or, for an entry, redacted), of every
    registered source; returns the totals."""
    result = prune_vectors()
    return {"checked": result.checked, "deleted": result.deleted}
