"""Tasks of the context builder: count the items a context sent to a model."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from django.db import OperationalError

from cogitator_memory.items.services import MemoryItems


@shared_task(
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=5,
    ignore_result=True,
)
def note_retrieved_task(item_ids: list[str], at: str | None = None) -> int:
    """Count that these items went to a model (``MemoryItems.note_retrieved``); items that
    are gone are not counted. Returns how many were."""
    return MemoryItems().note_retrieved(item_ids, datetime.fromisoformat(at) if at else None)
