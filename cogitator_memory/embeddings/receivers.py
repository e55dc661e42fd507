"""Keep the message index in step with threads.

Each change signal of ``cogitator_memory.signals`` (sent after commit) enqueues a task of
``tasks/embeddings.py`` with entry ids. Without an embedding provider nothing new is
indexed, but deleted and redacted entries still lose their vectors: a vector keeps its
text, and forgetting must not depend on the provider being configured. A task that
cannot be enqueued (the broker is down, or, when tasks run eagerly, the provider failed)
is logged and not raised: the write it follows has committed, and
``manage.py reindex_messages`` repairs the index.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import Task
from django.dispatch import receiver

from cogitator_memory import signals
from cogitator_memory.embeddings.message_index import is_indexable, message_index_enabled
from cogitator_memory.tasks.embeddings import embed_entries_task, unindex_entries_task
from cogitator_memory.threads.models import Entry

logger = logging.getLogger(__name__)

# Entry ids per task when a thread loses many entries at once: a long thread becomes
# several small messages and store deletes instead of one of unbounded size.
IDS_PER_TASK = 500


def _enqueue(task: Task, entry_ids: Sequence[str]) -> None:
    for start in range(0, len(entry_ids), IDS_PER_TASK):
        chunk = list(entry_ids[start : start + IDS_PER_TASK])
        try:
            task.delay(chunk)
        except Exception:
            logger.exception(
                "Could not run %s for entries %s; the message index misses this change "
                "until manage.py reindex_messages runs.",
                task.name,
                ", ".join(chunk[:5]) + (" ..." if len(chunk) > 5 else ""),
            )


@receiver(signals.entry_added, dispatch_uid="cogitator_memory.message_index.entry_added")
def index_added_entry(sender: Any, *, entry: Entry, **kwargs: Any) -> None:
    if message_index_enabled() and is_indexable(entry):
        _enqueue(embed_entries_task, [entry.pk])


@receiver(signals.entry_deleted, dispatch_uid="cogitator_memory.message_index.entry_deleted")
def unindex_deleted_entry(sender: Any, *, entry_id: str, **kwargs: Any) -> None:
    _enqueue(unindex_entries_task, [entry_id])


@receiver(signals.entry_redacted, dispatch_uid="cogitator_memory.message_index.entry_redacted")
def unindex_redacted_entry(sender: Any, *, entry: Entry, **kwargs: Any) -> None:
    _enqueue(unindex_entries_task, [entry.pk])


@receiver(signals.thread_cleared, dispatch_uid="cogitator_memory.message_index.thread_cleared")
@receiver(signals.thread_deleted, dispatch_uid="cogitator_memory.message_index.thread_deleted")
def unindex_thread_entries(sender: Any, *, entry_ids: Sequence[str], **kwargs: Any) -> None:
    if entry_ids:
        _enqueue(unindex_entries_task, entry_ids)
