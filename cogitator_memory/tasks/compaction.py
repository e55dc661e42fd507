"""Compaction of threads in the background: the task of a ``CompactionRun``.

``compact_thread`` takes the thread's id and its run's id, claims the run
(``jobs.run_job``: one worker at a time, under a lease) and compacts the thread with the
``COGITATOR_MEMORY["COMPACTION"]`` config. The run is marked done in the transaction that
writes the compaction entry, so a redelivered task finds it closed and does nothing. A
model that fails puts the run back in the queue after a backoff (dead after
``JOBS["MAX_ATTEMPTS"]`` tries). ``schedule_compaction`` queues a run when a thread
crosses its threshold.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.compaction.config import config_from_settings
from cogitator_memory.compaction.history import read_compacted_history
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.compaction.runs import CompactionRecorder, request_compaction
from cogitator_memory.compaction.services import (
    CompactionService,
    plan_compaction,
    threshold_crossed,
)
from cogitator_memory.exceptions import CompactionStale, LLMError, ThreadNotFound
from cogitator_memory.jobs import JobRecorder, run_job
from cogitator_memory.tasks.retries import retry_errors

logger = logging.getLogger(__name__)

__all__ = ["compact_thread", "schedule_compaction"]


RETRIED = retry_errors(LLMError)


def _compact(run: CompactionRun, recorder: JobRecorder[CompactionRun]) -> dict[str, Any]:
    assert isinstance(recorder, CompactionRecorder)
    try:
        entry = CompactionService().compact(
            run.thread_id,
            config_from_settings(),
            force=run.forced,
            after_write=lambda written: recorder.done(written.pk),
        )
    except ThreadNotFound:
        logger.info("Not compacting thread %s: it is gone.", run.thread_id)
        return {"compaction_entry_id": None}
    except CompactionStale as exc:
        # What it read changed under it; the next trigger reads it again.
        logger.info("Compaction of thread %s not written: %s", run.thread_id, exc.reason)
        recorder.done(None)
        return {"compaction_entry_id": None}
    if entry is None:
        recorder.done(None)
    return {"compaction_entry_id": entry.pk if entry is not None else None}


# Acknowledged late: a worker lost mid-run leaves the message to another (and the run's
# lease to the sweeper). No Celery retries: the run's row holds the tries.
@shared_task(acks_late=True, ignore_result=True)
def compact_thread(thread_id: str, run_id: str | None = None) -> dict[str, Any]:
    """Compact the thread for the run ``run_id`` if it crossed its threshold (or the run
    was forced); returns the compaction entry's id, or None when there was nothing to do
    (also when another worker has the run, or it is closed). Without a run, compacts
    past the threshold at once."""
    if run_id is None:
        try:
            entry = CompactionService().compact(thread_id, config_from_settings())
        except (ThreadNotFound, CompactionStale):
            return {"compaction_entry_id": None}
        return {"compaction_entry_id": entry.pk if entry is not None else None}
    result = run_job(CompactionRecorder, run_id, _compact, retry_on=RETRIED)
    return result if result is not None else {"compaction_entry_id": None}


def schedule_compaction(thread_id: str) -> bool:
    """Queue a compaction run for the thread when it crossed the configured threshold and
    none is queued. Returns whether it queued one."""
    config = config_from_settings()
    plan = plan_compaction(read_compacted_history(thread_id), config)
    if not plan.summarized or not threshold_crossed(plan, config):
        return False
    _run, created = request_compaction(thread_id, forced=False)
    return created


background.offer(Work.COMPACT_THREAD, compact_thread)
