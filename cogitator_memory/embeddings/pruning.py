"""Finding and deleting vectors that outlived their entries.

The thread services remove the vectors of entries that go in the same transaction (or,
for a store outside the database, through the outbox), so nothing should be left. Vectors
written before that was so, rows restored from a backup, or an index filled by hand can
still hold the text of entries that are gone or redacted; ``prune_message_vectors``
finds them by walking the message index's source ids a batch at a time and deletes them,
with or without an embedding provider.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cogitator_memory.embeddings.message_index import MESSAGE_SOURCE_TYPE, MESSAGES_INDEX
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.limits import check_limit
from cogitator_memory.threads.models import Entry

__all__ = ["PruneProgress", "prune_message_vectors"]

# Source ids checked per batch: one store page and one entry query each.
PRUNE_BATCH_SIZE = 1000


@dataclass(frozen=True)
class PruneProgress:
    """Sources checked so far, and vectors deleted because their entry is gone or
    redacted."""

    checked: int = 0
    deleted: int = 0


def prune_message_vectors(
    *,
    batch_size: int = PRUNE_BATCH_SIZE,
    progress: Callable[[PruneProgress], None] | None = None,
) -> PruneProgress:
    """Delete the message-index vectors whose entry no longer exists or was redacted.

    Works without an embedding provider (a vector keeps its text whether or not new
    ones can be made). ``progress`` is called after each batch. Returns the totals.
    """
    check_limit(batch_size, field="batch_size")
    store = get_embedding_store()
    messages = EmbeddingFilter(source_type=MESSAGE_SOURCE_TYPE, index=MESSAGES_INDEX)
    state = PruneProgress()
    for source_ids in store.iter_source_ids(messages, batch_size=batch_size):
        kept = set(
            Entry.objects.filter(pk__in=source_ids, redaction__isnull=True).values_list(
                "pk", flat=True
            )
        )
        gone = [source_id for source_id in source_ids if source_id not in kept]
        deleted = store.delete_by_sources(gone) if gone else 0
        state = PruneProgress(state.checked + len(source_ids), state.deleted + deleted)
        if progress is not None:
            progress(state)
    return state
