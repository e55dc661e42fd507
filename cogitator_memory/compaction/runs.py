"""Compaction runs: a job of record for every compaction done in the background.

``request_compaction`` queues a ``CompactionRun``, published to the ``compact_thread``
task once the transaction commits. A thread has at most one queued run, which a second
request joins, so two triggers of one thread give one compaction. The shared machinery
(claims, leases, retries, the dead state) is in ``cogitator_memory.jobs``.
"""

from __future__ import annotations

from cogitator_memory.background import Work
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.exceptions import CompactionRunNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.jobs import (
    JobKind,
    JobRecorder,
    get_visible_run,
    register_kind,
    request_run,
)
from cogitator_memory.llm.registry import require_summarizer

__all__ = [
    "COMPACTION_JOBS",
    "CompactionRecorder",
    "get_compaction_run",
    "register_compaction_jobs",
    "request_compaction",
]

COMPACTION_JOBS = JobKind(CompactionRun, Work.COMPACT_THREAD, args=lambda run: (run.thread_id,))


def request_compaction(
    thread_id: str, *, grants: Grants | None = None, forced: bool = True
) -> tuple[CompactionRun, bool]:
    """Compact the thread in the background, or join the run already open for it.
    Returns ``(run, created)``. ``forced`` compacts whatever the thread's size (a request
    through the API); else only past the configured threshold. Raises ``ThreadNotFound``
    for a thread the caller cannot see, ``NoGrant``, and ``LLMUnavailable`` when no model
    is configured."""
    require_summarizer("Compaction")
    return request_run(CompactionRecorder, thread_id, grants=grants, forced=forced)


def register_compaction_jobs() -> None:
    register_kind(COMPACTION_JOBS)


def get_compaction_run(run_id: str, *, grants: Grants | None = None) -> CompactionRun:
    """The run if the caller may see its thread; ``CompactionRunNotFound`` otherwise."""
    return get_visible_run(CompactionRun, run_id, grants=grants, not_found=CompactionRunNotFound)


class CompactionRecorder(JobRecorder[CompactionRun]):
    """Writes what the compaction task does onto its run; with no run it does nothing.
    A closed run stays closed: the task marks it done in the transaction that writes the
    compaction entry, and a redelivered task must not report on it again."""

    model = CompactionRun

    def done(self, entry_id: str | None) -> None:
        self.finished(compaction_entry_id=entry_id or "")
