"""Extraction runs asked for through the API: a job of record per request.

``request_extraction`` checks the caller and the model, then writes an ``ExtractionRun``
and enqueues ``extract_thread_task`` with the run's id as the task id once the
transaction commits. A thread has at most one open (queued or running) run: a second
request while one is open gets that one. The task reports on the row (``RunRecorder``):
started, windows done of the total, what it did, or the error a client may read. The
shared machinery, and what becomes of a lost run, is in ``cogitator_memory.jobs``.
"""

from __future__ import annotations

from cogitator_memory.background import Work, task_for
from cogitator_memory.exceptions import ExtractionRunNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.items.thread_windows import ThreadExtraction
from cogitator_memory.jobs import (
    ENQUEUE_FAILED,
    LOST,
    LOST_AFTER,
    JobRecorder,
    enqueue_run,
    get_visible_run,
    public_error,
    request_run,
)
from cogitator_memory.llm.registry import require_summarizer

__all__ = [
    "ENQUEUE_FAILED",
    "LOST",
    "LOST_AFTER",
    "RunRecorder",
    "get_run",
    "public_error",
    "request_extraction",
]


def request_extraction(
    thread_id: str, *, grants: Grants | None = None
) -> tuple[ExtractionRun, bool]:
    """Extract the thread's unread windows in the background, or join the run already
    open for it. Returns ``(run, created)``. Raises ``ThreadNotFound`` for a thread the
    caller cannot see, ``NoGrant``, and ``LLMUnavailable`` when no model is configured."""
    require_summarizer("Extraction of memory items")
    return request_run(RunRecorder, thread_id, grants=grants, enqueue=_enqueue)


def _enqueue(run_id: str, thread_id: str) -> None:
    enqueue_run(task_for(Work.EXTRACT_THREAD), RunRecorder(run_id), thread_id)


def get_run(run_id: str, *, grants: Grants | None = None) -> ExtractionRun:
    """The run if the caller may see its thread; ``ExtractionRunNotFound`` otherwise."""
    return get_visible_run(ExtractionRun, run_id, grants=grants, not_found=ExtractionRunNotFound)


class RunRecorder(JobRecorder[ExtractionRun]):
    """Writes what an extraction task does onto its run; with no run (a debounced
    extraction, the command), it does nothing."""

    model = ExtractionRun

    def progress(self, done: int, total: int) -> None:
        self._update(windows_done=done, windows_total=total)

    def done(self, result: ThreadExtraction) -> None:
        self.finished(
            windows_done=result.windows,
            windows_total=result.windows,
            windows_skipped=result.skipped,
            calls=result.calls,
            items_written=result.items,
        )
