"""What enqueues the app's tasks: receivers of the change signals.

A new message or tool result is embedded into the message index by
``embed_entries_task``, and a memory item written by ``embed_items_task`` (both when an
embedding provider is configured); a thread that crosses
its compaction threshold gets a compaction run (``schedule_compaction``, when
``COMPACTION["ENABLED"]``). Removing the vectors of
entries that go is not done here: the thread services do it in the transaction of the
change (``dependents.forget_entries``). A task that cannot be enqueued (the broker is down,
or, when tasks run eagerly, the provider failed) is logged and not raised: the write it
follows has committed, and ``manage.py reindex_messages`` embeds what was missed.
"""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import receiver

from cogitator_memory import signals
from cogitator_memory.conf import memory_settings
from cogitator_memory.embeddings.message_index import is_indexable, message_index_enabled
from cogitator_memory.tasks.compaction import schedule_compaction
from cogitator_memory.tasks.embeddings import embed_entries_task, embed_items_task
from cogitator_memory.tasks.extraction import schedule_extraction
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
            "Could not schedule the extraction of thread %s; manage.py extract_items "
            "reads what was missed.",
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
        embed_entries_task.delay([entry.pk])
    except Exception:
        logger.exception(
            "Could not run %s for entry %s; the message index misses it until "
            "manage.py reindex_messages runs.",
            embed_entries_task.name,
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
