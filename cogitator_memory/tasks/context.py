"""Tasks of the context builder: count the items a context sent to a model."""

from __future__ import annotations

from datetime import datetime

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.tasks.retries import retried_task


# Acknowledged before it runs: a count is not worth counting twice after a lost worker.
@retried_task(ignore_result=True, acks_late=False)
def note_retrieved_task(item_ids: list[str], at: str | None = None) -> int:
    """Count that these items went to a model (``MemoryItems.note_retrieved``); items that
    are gone are not counted. Returns how many were."""
    return MemoryItems().note_retrieved(item_ids, datetime.fromisoformat(at) if at else None)


background.offer(Work.NOTE_RETRIEVED, note_retrieved_task)
