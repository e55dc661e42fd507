"""Extraction of memory items in the background: the task of an ``ExtractionRun``.

``extract_thread_task`` takes the thread's id and its run's id, claims the run
(``jobs.run_job``: one worker at a time, under a lease) and calls ``extract_thread``:
each window of the branch is read once whatever the number of deliveries (the windows'
natural key, written with the window's items), so a redelivered or retried task adds
nothing. A model that fails, or a database busy for a moment, puts the run back in the
queue after a backoff (dead after ``JOBS["MAX_ATTEMPTS"]`` tries). The run is queued by a
request through the API or, after new turns, by ``items.runs.schedule_extraction``.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.exceptions import ExtractionAnswerError, LLMError, ThreadNotFound
from cogitator_memory.graph.extraction import write_extracted_relations
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.items.runs import RunRecorder
from cogitator_memory.items.runs import schedule_extraction as schedule_extraction
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.jobs import JobRecorder, run_job
from cogitator_memory.tasks.retries import retry_errors

logger = logging.getLogger(__name__)

__all__ = ["extract_thread_task", "schedule_extraction"]

# What a later try may get past: the model failing, a database busy for a moment.
RETRIED = retry_errors(LLMError, ExtractionAnswerError)

NOTHING = {"windows": 0, "skipped": 0, "calls": 0, "items": 0}


def _extract(run: ExtractionRun, recorder: JobRecorder[ExtractionRun]) -> dict[str, int]:
    assert isinstance(recorder, RunRecorder)
    try:
        done = extract_thread(
            run.thread_id, progress=recorder.progress, write_relations=write_extracted_relations
        )
    except ThreadNotFound:
        # Its runs went with it.
        logger.info("Not extracting thread %s: it is gone.", run.thread_id)
        return NOTHING
    recorder.done(done)
    return {
        "windows": done.windows,
        "skipped": done.skipped,
        "calls": done.calls,
        "items": done.items,
    }


# Acknowledged late: a worker lost mid-run leaves the message to another (and the run's
# lease to the sweeper). No Celery retries: the run's row holds the tries.
@shared_task(acks_late=True, ignore_result=True)
def extract_thread_task(thread_id: str, run_id: str | None = None) -> dict[str, Any]:
    """Extract the thread's unread windows for the run ``run_id``; returns what the run
    did (nothing when another worker has the run, or it is closed). Without a run (a
    call of its own), extracts at once."""
    if run_id is None:
        try:
            done = extract_thread(thread_id, write_relations=write_extracted_relations)
        except ThreadNotFound:
            return NOTHING
        return {
            "windows": done.windows,
            "skipped": done.skipped,
            "calls": done.calls,
            "items": done.items,
        }
    result = run_job(RunRecorder, run_id, _extract, retry_on=RETRIED)
    return result if result is not None else NOTHING


background.offer(Work.EXTRACT_THREAD, extract_thread_task)
