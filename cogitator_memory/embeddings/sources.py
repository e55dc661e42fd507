"""What the app's vectors are of: the registry of vector sources.

Every kind of vector the app writes (the message index's vectors of entries, the vectors of
memory items, ...) registers a ``VectorSource`` once, at start-up (``AppConfig.ready``):
its ``source_type`` and ``index`` (as stored with each vector) and ``standing``, the rows
of the model whose primary keys are the source ids that still stand (an entry not
redacted, an item that exists). The capability that writes the vectors registers them;
the embeddings layer knows the registry, never the capabilities above it.

Two readers answer from it, for every source type alike:

- ``embeddings/pruning.py`` deletes the vectors whose source no longer stands
  (``manage.py reindex_messages --prune``, ``prune_vectors_task``);
- ``search/scoping.py`` drops from every search the hits whose source no longer stands
  (``standing_ids`` for the hits of a store, ``standing_q`` inside a database query).

Vectors of a source type and index nobody registered (documents a project stores through
the store itself) are its own: neither reader touches them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from cogitator_memory.embeddings.types import INDEX_KEY, EmbeddingFilter, StoredEmbedding

__all__ = [
    "VectorSource",
    "register_source",
    "source_of",
    "standing_ids",
    "standing_q",
    "vector_sources",
]

# Source ids per query of ``standing_ids``: well under SQLite's parameter limit.
IDS_PER_QUERY = 500


@dataclass(frozen=True)
class VectorSource:
    """One kind of vector the app writes, and how to tell whether its source stands.

    ``standing()`` returns a queryset of the source model whose rows' primary keys are
    the source ids that still stand (entries not redacted, items that exist); it is
    filtered by id for ``standing_ids`` and used as a subquery by ``standing_q``.
    ``noun`` names the sources in reports ("entries", "items")."""

    source_type: str
    index: str
    standing: Callable[[], QuerySet[Any]]
    noun: str = "sources"

    @property
    def key(self) -> tuple[str, str]:
        return (self.source_type, self.index)

    @property
    def filter(self) -> EmbeddingFilter:
        """The filter of this source's vectors in a store."""
        return EmbeddingFilter(source_type=self.source_type, index=self.index)

    def holds(self, embedding: StoredEmbedding) -> bool:
        """Whether a stored vector is one of this source's."""
        return (
            embedding.source_type == self.source_type
            and str(embedding.metadata.get(INDEX_KEY) or "") == self.index
        )


_sources: dict[tuple[str, str], VectorSource] = {}


def register_source(source: VectorSource) -> None:
    """Register a kind of vector (again under the same type and index replaces it)."""
    _sources[source.key] = source


def vector_sources() -> list[VectorSource]:
    return list(_sources.values())


def source_of(embedding: StoredEmbedding) -> VectorSource | None:
    """The registered source a stored vector is of, or None (a vector of its own)."""
    index = str(embedding.metadata.get(INDEX_KEY) or "")
    return _sources.get((embedding.source_type, index))


def standing_ids(source: VectorSource, source_ids: Iterable[str]) -> set[str]:
    """Those of ``source_ids`` whose source stands now; one query per ``IDS_PER_QUERY``."""
    ids = sorted(set(source_ids))
    found: set[str] = set()
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        rows = source.standing().filter(pk__in=chunk).values_list("pk", flat=True)
        found.update(str(pk) for pk in rows)
    return found


def standing_q(sources: Collection[VectorSource] | None = None) -> Q:
    """A condition on ``Embedding`` rows: a row of a registered source only while its
    source stands (rows of no registered source pass)."""
    condition = Q()
    for source in vector_sources() if sources is None else sources:
        condition &= ~Q(source_type=source.source_type, index_name=source.index) | Q(
            source_id__in=source.standing().values("pk")
        )
    return condition
