"""Extraction runs: a job of record for every extraction done in the background.

``request_extraction`` (the API) checks the caller and the model, then queues an
``ExtractionRun``, published to ``extract_thread_task`` once the transaction commits;
``schedule_extraction`` (new turns, when ``EXTRACTION["ENABLED"]``) queues one that is
claimed ``DEBOUNCE_SECONDS`` later, so the turns of a burst are read by one run. A thread
has at most one queued run, which requests join, and one running. The task reports on
the row (``RunRecorder``): windows done of the total, what it did, or the error a client
may read. The shared machinery (claims, leases, retries, the dead state) is in
``cogitator_memory.jobs``.
"""

from __future__ import annotations

from datetime import timedelta

from cogitator_memory.background import Work
from cogitator_memory.conf import memory_settings
from cogitator_memory.exceptions import ExtractionRunNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.items.thread_windows import ThreadExtraction
from cogitator_memory.jobs import (
    JobKind,
    JobRecorder,
    get_visible_run,
    public_error,
    register_kind,
    request_run,
)
from cogitator_memory.llm.registry import require_summarizer

__all__ = [
    "EXTRACTION_JOBS",
    "RunRecorder",
    "get_run",
    "public_error",
    "request_extraction",
    "schedule_extraction",
]

EXTRACTION_JOBS = JobKind(ExtractionRun, Work.EXTRACT_THREAD, args=lambda run: (run.thread_id,))


def request_extraction(
    thread_id: str, *, grants: Grants | None = None
) -> tuple[ExtractionRun, bool]:
    """Extract the thread's unread windows in the background, or join the run already
    open for it. Returns ``(run, created)``. Raises ``ThreadNotFound`` for a thread the
    caller cannot see, ``NoGrant``, and ``LLMUnavailable`` when no model is configured."""
    require_summarizer("Extraction of memory items")
    return request_run(RunRecorder, thread_id, grants=grants)


def schedule_extraction(thread_id: str) -> bool:
    """Queue the thread's extraction to run ``DEBOUNCE_SECONDS`` from now, unless one is
    queued already (the new turns join it). Returns whether it queued one."""
    delay = timedelta(seconds=int(memory_settings.EXTRACTION["DEBOUNCE_SECONDS"]))
    _run, created = request_run(RunRecorder, thread_id, grants=None, delay=delay)
    return created


def register_extraction_jobs() -> None:
    register_kind(EXTRACTION_JOBS)


def get_run(run_id: str, *, grants: Grants | None = None) -> ExtractionRun:
    """The run if the caller may see its thread; ``ExtractionRunNotFound`` otherwise."""
    return get_visible_run(ExtractionRun, run_id, grants=grants, not_found=ExtractionRunNotFound)


class RunRecorder(JobRecorder[ExtractionRun]):
    """Writes what an extraction task does onto its run; with no run (the command), it
    does nothing."""

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
