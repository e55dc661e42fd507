"""Compaction runs: a job of record for every compaction done in the background.

``request_compaction`` writes a ``CompactionRun`` and enqueues the ``compact_thread`` task
with the run's id as the task id once the transaction commits. A thread has at most one
open (queued or running) run: a second request while one is open gets that one, so two
triggers of one thread give one compaction. The shared machinery, and what becomes of a
lost run, is in ``cogitator_memory.jobs``.
"""

from __future__ import annotations

from cogitator_memory.background import Work, task_for
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.exceptions import CompactionRunNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.jobs import (
    LOST_AFTER,
    OPEN_RUN_STATUSES,
    JobRecorder,
    enqueue_run,
    get_visible_run,
    request_run,
)
from cogitator_memory.llm.registry import require_summarizer

__all__ = ["LOST_AFTER", "CompactionRecorder", "get_compaction_run", "request_compaction"]


def request_compaction(
    thread_id: str, *, grants: Grants | None = None, forced: bool = True
) -> tuple[CompactionRun, bool]:
    """Compact the thread in the background, or join the run already open for it.
    Returns ``(run, created)``. ``forced`` compacts whatever the thread's size (a request
    through the API); else only past the configured threshold. Raises ``ThreadNotFound``
    for a thread the caller cannot see, ``NoGrant``, and ``LLMUnavailable`` when no model
    is configured."""
    require_summarizer("Compaction")
    return request_run(
        CompactionRecorder, thread_id, grants=grants, enqueue=_enqueue, forced=forced
    )


def _enqueue(run_id: str, thread_id: str) -> None:
    enqueue_run(task_for(Work.COMPACT_THREAD), CompactionRecorder(run_id), thread_id)


def get_compaction_run(run_id: str, *, grants: Grants | None = None) -> CompactionRun:
    """The run if the caller may see its thread; ``CompactionRunNotFound`` otherwise."""
    return get_visible_run(CompactionRun, run_id, grants=grants, not_found=CompactionRunNotFound)


class CompactionRecorder(JobRecorder[CompactionRun]):
    """Writes what the compaction task does onto its run; with no run it does nothing.
    A closed run stays closed: the task marks it done in the transaction that writes the
    compaction entry, and a redelivered task must not report on it again."""

    model = CompactionRun
    only_open = True

    def is_finished(self) -> bool:
        """Whether the run is done or failed already (a redelivered task then does
        nothing)."""
        if self.run_id is None:
            return False
        return (
            CompactionRun.objects.filter(pk=self.run_id)
            .exclude(status__in=OPEN_RUN_STATUSES)
            .exists()
        )

    def forced(self) -> bool:
        if self.run_id is None:
            return False
        return bool(
            CompactionRun.objects.filter(pk=self.run_id).values_list("forced", flat=True).first()
        )

    def done(self, entry_id: str | None) -> None:
        self.finished(compaction_entry_id=entry_id or "")
