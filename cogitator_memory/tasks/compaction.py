"""Compaction of threads in the background.

``compact_thread`` compacts one thread with the ``COGITATOR_MEMORY["COMPACTION"]`` config.
With ``run_id`` its ``CompactionRun`` follows along; the open run is the thread's lock (one
open run per thread, kept by the database), so a second trigger while one runs does
nothing. The run is marked done in the transaction that writes the compaction entry, so a
redelivered task finds it done and does nothing; without a run a redelivery finds the
thread below its threshold. Acknowledged late, retried with backoff when the model fails.
``schedule_compaction`` opens a run when a thread crosses its threshold.
"""

from __future__ import annotations

import logging
from typing import Any

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.compaction.config import config_from_settings
from cogitator_memory.compaction.history import read_compacted_history
from cogitator_memory.compaction.runs import CompactionRecorder, request_compaction
from cogitator_memory.compaction.services import (
    CompactionService,
    plan_compaction,
    threshold_crossed,
)
from cogitator_memory.exceptions import CompactionStale, LLMError, ThreadNotFound
from cogitator_memory.jobs import public_error
from cogitator_memory.tasks.retries import retried_task, retry_errors

logger = logging.getLogger(__name__)

__all__ = ["compact_thread", "schedule_compaction"]


RETRIED = retry_errors(LLMError)


# Safe to run again: the run is marked done with the compaction entry it writes.
@retried_task(*RETRIED, bind=True)
def compact_thread(self, thread_id: str, run_id: str | None = None) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Compact the thread if it crossed its threshold (or its run was forced); returns
    the compaction entry's id, or None when there was nothing to do."""
    run = CompactionRecorder(run_id)
    if run.is_finished():
        return {"compaction_entry_id": None, "redelivered": True}
    run.started(attempt=self.request.retries + 1)
    try:
        entry = CompactionService().compact(
            thread_id,
            config_from_settings(),
            force=run.forced(),
            after_write=lambda written: run.done(written.pk),
        )
    except ThreadNotFound:
        logger.info("Not compacting thread %s: it is gone.", thread_id)
        return {"compaction_entry_id": None}
    except CompactionStale as exc:
        # What it read changed under it; the next trigger reads it again.
        logger.info("Compaction of thread %s not written: %s", thread_id, exc.reason)
        run.done(None)
        return {"compaction_entry_id": None}
    except RETRIED as exc:
        if self.request.retries >= self.max_retries:
            run.failed(public_error(exc))
        else:
            run.retrying(exc)
        raise
    except Exception as exc:
        run.failed(public_error(exc))
        raise
    if entry is None:
        run.done(None)
    return {"compaction_entry_id": entry.pk if entry is not None else None}


def schedule_compaction(thread_id: str) -> bool:
    """Open a compaction run for the thread when it crossed the configured threshold and
    none is open. Returns whether it opened one."""
    config = config_from_settings()
    plan = plan_compaction(read_compacted_history(thread_id), config)
    if not plan.summarized or not threshold_crossed(plan, config):
        return False
    _run, created = request_compaction(thread_id, forced=False)
    return created


background.offer(Work.COMPACT_THREAD, compact_thread)
