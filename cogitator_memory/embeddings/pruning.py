"""Finding and deleting vectors that outlived their sources.

The services remove the vectors of what goes in the same transaction (or, for a store
outside the database, through the outbox): the vectors of deleted or redacted entries,
of purged memory items. Vectors written before that was so, rows restored from a backup,
or an index filled by hand can still hold the text of what is gone; ``prune_vectors``
finds them for every registered source (``embeddings/sources.py``: the message index,
the items, ...) by walking each source's ids in the store a batch at a time, and deletes
the vectors of those that no longer stand, with or without an embedding provider.
Vectors of a source type nobody registered are left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.sources import VectorSource, standing_ids, vector_sources
from cogitator_memory.embeddings.types import EmbeddingStore
from cogitator_memory.limits import check_limit

__all__ = ["PruneProgress", "prune_vectors"]

# Source ids checked per batch: one store page and one source query each.
PRUNE_BATCH_SIZE = 1000


@dataclass(frozen=True)
class PruneProgress:
    """Sources checked so far, vectors deleted because their source is gone (or, for an
    entry, redacted), and the vectors deleted per source type."""

    checked: int = 0
    deleted: int = 0
    deleted_by_type: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def after(self, source: VectorSource, checked: int, deleted: int) -> PruneProgress:
        by_type = dict(self.deleted_by_type)
        by_type[source.source_type] = by_type.get(source.source_type, 0) + deleted
        return PruneProgress(
            self.checked + checked, self.deleted + deleted, MappingProxyType(by_type)
        )


def _delete_vectors_of(store: EmbeddingStore, source: VectorSource, source_ids: list[str]) -> int:
    """Delete this source's vectors of these ids (only this source type and index: an id
    gone as one kind of source says nothing of vectors of another)."""
    stale = store.get_by_sources(source_ids, filter=source.filter)
    return store.delete([embedding.id for embedding in stale]) if stale else 0


def prune_vectors(
    *,
    batch_size: int = PRUNE_BATCH_SIZE,
    progress: Callable[[PruneProgress], None] | None = None,
) -> PruneProgress:
    """Delete the vectors, of every registered source, whose source no longer stands.

    Works without an embedding provider (a vector keeps its text whether or not new
    ones can be made). ``progress`` is called after each batch. Returns the totals.
    """
    check_limit(batch_size, field="batch_size")
    store = get_embedding_store()
    state = PruneProgress()
    for source in vector_sources():
        for source_ids in store.iter_source_ids(source.filter, batch_size=batch_size):
            kept = standing_ids(source, source_ids)
            gone = [source_id for source_id in source_ids if source_id not in kept]
            deleted = _delete_vectors_of(store, source, gone) if gone else 0
            state = state.after(source, len(source_ids), deleted)
            if progress is not None:
                progress(state)
    return state
