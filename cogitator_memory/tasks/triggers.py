"""What wakes the app's tasks: receivers of the change signals (sent on commit).

A new message or tool result got a pending vector in the transaction that added it
(``EntryVectors.entries_added``); here its task is published (``embed_entries_task``),
and a memory item written is embedded by ``embed_items_task`` (both when an embedding
provider is configured). A thread with new turns gets an extraction run claimed
``DEBOUNCE_SECONDS`` later (``schedule_extraction``, when ``EXTRACTION["ENABLED"]``), and
one that crosses its compaction threshold a compaction run (``schedule_compaction``, when
``COMPACTION["ENABLED"]``). Removing the vectors of entries that go is not done here: the
thread services do it in the transaction of the change (``dependents.forget_entries``).
A broker that is down is logged and not raised: the write it follows has committed, and
its job of record is published again by the sweeper.
"""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import receiver

from cogitator_memory import signals
from cogitator_memory.conf import memory_settings
from cogitator_memory.embeddings.message_index import is_indexable, message_index_enabled
from cogitator_memory.embeddings.models import PendingVector
from cogitator_memory.items.runs import schedule_extraction
from cogitator_memory.jobs import publish
from cogitator_memory.tasks.compaction import schedule_compaction
from cogitator_memory.tasks.embeddings import embed_items_task
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry

logger = logging.getLogger(__name__)


@receiver(signals.entry_added, dispatch_uid="cogitator_memory.extraction.entry_added")
def extract_after_new_entries(sender: Any, *, entry: Entry, **kwargs: Any) -> None:
    if not memory_settings.EXTRACTION["ENABLED"] or entry.type not in CONVERSATION_TYPES:
        return
    try:
        schedule_extraction(entry.thread_id)
    except Exception:
        logger.exception(
            "Could not schedule the extraction of thread %s; the next turn, or manage.py "
            "extract_items, reads what was missed.",
            entry.thread_id,
        )


@receiver(signals.entry_added, dispatch_uid="cogitator_memory.compaction.entry_added")
def compact_after_new_entries(sender: Any, *, entry: Entry, **kwargs: Any) -> None:
    if not memory_settings.COMPACTION["ENABLED"] or entry.type not in CONVERSATION_TYPES:
        return
    try:
        schedule_compaction(entry.thread_id)
    except Exception:
        logger.exception(
            "Could not schedule the compaction of thread %s; the next entry tries again.",
            entry.thread_id,
        )


@receiver(signals.entry_added, dispatch_uid="cogitator_memory.message_index.entry_added")
def index_added_entry(sender: Any, *, entry: Entry, **kwargs: Any) -> None:
    if not (message_index_enabled() and is_indexable(entry)):
        return
    try:
        publish(PendingVector, [entry.pk])
    except Exception:
        logger.exception(
            "Could not embed entry %s now; its pending vector is taken by a later batch.",
            entry.pk,
        )


@receiver(signals.item_written, dispatch_uid="cogitator_memory.item_vectors.item_written")
def embed_written_item(sender: Any, *, item_id: str, **kwargs: Any) -> None:
    if not message_index_enabled():
        return
    try:
        embed_items_task.delay([item_id])
    except Exception:
        logger.exception(
            "Could not run %s for item %s; recall embeds it when it next searches it.",
            embed_items_task.name,
            item_id,
        )
