"""Counting what a context sent to a model (``MemoryItem.times_retrieved``), in the
background: the count is not worth a write on the turn's path."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.db import transaction

from cogitator_memory.background import Work, task_for

__all__ = ["note_retrieved_later"]

logger = logging.getLogger(__name__)


def note_retrieved_later(item_ids: Iterable[str], at: datetime) -> None:
    """Count that these items went to a model at ``at``, by a task enqueued once the
    current transaction commits (at once outside one)."""
    ids = list(dict.fromkeys(item_ids))
    if ids:
        transaction.on_commit(lambda: _enqueue(ids, at))


def _enqueue(ids: list[str], at: datetime) -> None:
    try:
        task_for(Work.NOTE_RETRIEVED).delay(ids, at.isoformat())
    except Exception:
        # A count missed is not worth failing a turn over.
        logger.exception("Could not count %d items as retrieved.", len(ids))
