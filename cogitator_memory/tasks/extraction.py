"""Extraction of memory items in the background.

``extract_thread_task`` takes a thread id and calls ``extract_thread``: each window of the
branch is read once whatever the number of deliveries (the windows' natural key), so the
task is acknowledged late and retried with backoff when the model fails.
``schedule_extraction`` enqueues it a while after new entries (``DEBOUNCE_SECONDS``),
once per thread and while, so a burst of entries is read in one run.
"""

from __future__ import annotations

import logging

from django.core.cache import cache

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import ExtractionAnswerError, LLMError, ThreadNotFound
from cogitator_memory.items.runs import RunRecorder
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.jobs import public_error
from cogitator_memory.tasks.retries import retried_task, retry_errors

logger = logging.getLogger(__name__)

__all__ = ["extract_thread_task", "schedule_extraction"]

PENDING_KEY = "cogitator_memory:extraction-pending:{thread_id}"


# What a later try may get past: the model failing, a database busy for a moment.
RETRIED = retry_errors(LLMError, ExtractionAnswerError)


# Safe to run again: each window of the branch is read once (the windows' natural key).
@retried_task(*RETRIED, bind=True)
def extract_thread_task(self, thread_id: str, run_id: str | None = None) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Extract the thread's unread windows; returns what the run did. With ``run_id``
    (an extraction asked for through the API), its ``ExtractionRun`` row follows along."""
    cache.delete(PENDING_KEY.format(thread_id=thread_id))
    run = RunRecorder(run_id)
    run.started(attempt=self.request.retries + 1)

    def progress(done: int, total: int) -> None:
        self.update_state(state="PROGRESS", meta={"done": done, "total": total})
        run.progress(done, total)

    try:
        done = extract_thread(thread_id, progress=progress)
    except ThreadNotFound:
        # Its runs went with it.
        logger.info("Not extracting thread %s: it is gone.", thread_id)
        return {"windows": 0, "skipped": 0, "calls": 0, "items": 0}
    except RETRIED as exc:
        if self.request.retries >= self.max_retries:
            run.failed(public_error(exc))
        else:
            run.retrying(exc)
        raise
    except Exception as exc:
        run.failed(public_error(exc))
        raise
    run.done(done)
    return {
        "windows": done.windows,
        "skipped": done.skipped,
        "calls": done.calls,
        "items": done.items,
    }


def schedule_extraction(thread_id: str) -> bool:
    """Enqueue the thread's extraction after ``DEBOUNCE_SECONDS``, unless one is pending.
    Returns whether it enqueued."""
    delay = int(memory_settings.EXTRACTION["DEBOUNCE_SECONDS"])
    if not cache.add(PENDING_KEY.format(thread_id=thread_id), True, timeout=delay + 60):
        return False
    extract_thread_task.apply_async(args=(thread_id,), countdown=delay)
    return True


background.offer(Work.EXTRACT_THREAD, extract_thread_task)
