"""What the stores that keep embeddings in the Django database share."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Q

from cogitator_memory.embeddings.models import (
    AGENT_ID_KEY,
    INDEX_KEY,
    THREAD_ID_KEY,
    USER_ID_KEY,
    Embedding,
    new_embedding_id,
)
from cogitator_memory.embeddings.querysets import EmbeddingQuerySet
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    NewEmbedding,
    StoredEmbedding,
    require_conditions,
)
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.jsondata import filter_json_values, json_problem
from cogitator_memory.keywords.models import DocumentKind
from cogitator_memory.keywords.postings import IndexedDocument, keyword_index

# Sources per DELETE when adding replaces what was stored; keeps each statement's
# parameter count well under SQLite's limit.
REPLACE_CHUNK_SIZE = 200
# Rows per DELETE (and per read of their keyword postings) when rows go.
DELETE_CHUNK_SIZE = 1000
# Rows per UPDATE when a thread's owner changes.
OWNER_BATCH_SIZE = 500


def vector_bytes(vector: Sequence[float] | np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def bytes_vector(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype="<f4")


def check_vector(vector: Sequence[float], *, field: str = "vector") -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise InvalidInput({field: "A vector is a non-empty list of numbers."})
    if not np.all(np.isfinite(array)):
        raise InvalidInput({field: "Vector values must be finite numbers."})
    if not np.any(array):
        raise InvalidInput({field: "A zero vector has no direction to compare."})
    return array


def scope_value(metadata: dict[str, Any], key: str) -> str | None:
    """A scope key of metadata as its indexed column holds it (a text, or None)."""
    value = metadata.get(key)
    return str(value) if value is not None else None


def stored(row: Embedding, *, with_vector: bool = False) -> StoredEmbedding:
    return StoredEmbedding(
        id=row.id,
        source_type=row.source_type,
        source_id=row.source_id,
        content=row.content,
        metadata=dict(row.metadata or {}),
        dimensions=row.dimensions,
        created_at=row.created_at,
        vector=bytes_vector(row.vector).tolist() if with_vector else None,
    )


def filter_columns_q(filter: EmbeddingFilter) -> Q:
    """A filter's condition on the columns ``Embedding`` shares with the keyword index's
    corpora (agent, thread, user, source type, index); its metadata aside."""
    condition = Q()
    if filter.agent_id is not None:
        condition &= Q(agent_id=filter.agent_id) | Q(agent_id__isnull=True)
    if filter.thread_id is not None:
        condition &= Q(thread_id=filter.thread_id) | Q(thread_id__isnull=True)
    if filter.user_id is not None:
        condition &= Q(user_id=filter.user_id) | Q(user_id__isnull=True)
    if filter.source_type is not None:
        condition &= Q(source_type=filter.source_type)
    if filter.index is not None:
        condition &= Q(index_name=filter.index)
    return condition


def filtered(queryset: EmbeddingQuerySet, filter: EmbeddingFilter | None) -> EmbeddingQuerySet:
    """Apply a filter: agent and thread also admit rows of no agent / thread."""
    if filter is None:
        return queryset
    queryset = queryset.filter(filter_columns_q(filter))
    if filter.metadata:
        queryset = filter_json_values(queryset, "metadata", filter.metadata, error_field="filter")
    return queryset


def _keyword_document(row: Embedding) -> IndexedDocument:
    return IndexedDocument(
        document_id=row.pk,
        text=row.content,
        thread_id=row.thread_id,
        agent_id=row.agent_id,
        user_id=row.user_id,
        source_type=row.source_type,
        index_name=row.index_name,
    )


def _delete_rows(rows: EmbeddingQuerySet) -> int:
    """Delete these rows and their keyword postings; the number deleted."""
    ids = list(rows.values_list("pk", flat=True))
    if not ids:
        return 0
    keyword_index.remove(DocumentKind.EMBEDDING, ids)
    deleted = 0
    for start in range(0, len(ids), DELETE_CHUNK_SIZE):
        count, _ = Embedding.objects.filter(pk__in=ids[start : start + DELETE_CHUNK_SIZE]).delete()
        deleted += count
    return deleted


class DatabaseEmbeddingStore:
    """Adds, reads and deletes embeddings as rows of ``Embedding``; subclasses search."""

    # Rows live in the app's database: writes join the caller's transaction.
    transactional = True

    def __init__(self, *, dimensions: int | None = None) -> None:
        self.dimensions = dimensions

    def _check_new(self, embedding: NewEmbedding) -> np.ndarray:
        vector = check_vector(embedding.vector)
        if self.dimensions is not None and vector.size != self.dimensions:
            raise InvalidInput(
                {"vector": f"Expected {self.dimensions} dimensions, got {vector.size}."}
            )
        problem = json_problem(dict(embedding.metadata)) or json_problem(embedding.content)
        if problem:
            raise InvalidInput({"metadata": problem})
        if not embedding.source_id or not embedding.source_type:
            raise InvalidInput({"source_id": "source_type and source_id are required."})
        return vector

    def _row(self, embedding: NewEmbedding, vector: np.ndarray) -> Embedding:
        metadata = dict(embedding.metadata)
        return Embedding(
            id=embedding.id or new_embedding_id(),
            source_type=embedding.source_type,
            source_id=embedding.source_id,
            index_name=str(metadata.get(INDEX_KEY) or ""),
            content=embedding.content,
            dimensions=int(vector.size),
            vector=vector_bytes(vector),
            metadata=metadata,
            agent_id=scope_value(metadata, AGENT_ID_KEY),
            thread_id=scope_value(metadata, THREAD_ID_KEY),
            user_id=scope_value(metadata, USER_ID_KEY),
        )

    @transaction.atomic
    def add(self, embeddings: Sequence[NewEmbedding]) -> list[StoredEmbedding]:
        """Store embeddings; one of the same (source type, source id, index) replaces the
        one stored, so adding the same source again never duplicates it."""
        rows = [self._row(embedding, self._check_new(embedding)) for embedding in embeddings]
        # One DELETE per chunk of sources: the rows these replace, and rows of these ids.
        for start in range(0, len(rows), REPLACE_CHUNK_SIZE):
            chunk = rows[start : start + REPLACE_CHUNK_SIZE]
            same_source = Q(pk__in=[row.pk for row in chunk])
            for row in chunk:
                same_source |= Q(
                    source_type=row.source_type,
                    source_id=row.source_id,
                    index_name=row.index_name,
                )
            _delete_rows(Embedding.objects.filter(same_source))
        Embedding.objects.bulk_create(rows, batch_size=500)
        keyword_index.add(DocumentKind.EMBEDDING, [_keyword_document(row) for row in rows])
        self.after_write(rows)
        return [stored(row) for row in rows]

    def after_write(self, rows: list[Embedding]) -> None:
        """Hook for stores that keep a second copy of the vector (pgvector)."""

    def get_by_sources(
        self, source_ids: Sequence[str], *, filter: EmbeddingFilter | None = None
    ) -> list[StoredEmbedding]:
        rows = filtered(Embedding.objects.of_sources(list(source_ids)), filter)
        return [stored(row, with_vector=True) for row in rows.order_by("source_id", "id")]

    def sources_present(
        self, source_ids: Sequence[str], *, filter: EmbeddingFilter | None = None
    ) -> set[str]:
        """The ids among ``source_ids`` with an embedding ``filter`` admits: the sources
        ``get_by_sources`` would return, read without their text or vectors."""
        rows = filtered(Embedding.objects.of_sources(list(source_ids)), filter)
        return set(rows.values_list("source_id", flat=True))

    @transaction.atomic
    def delete(self, ids: Sequence[str]) -> int:
        return _delete_rows(Embedding.objects.filter(pk__in=list(ids)))

    @transaction.atomic
    def delete_by_sources(self, source_ids: Sequence[str]) -> int:
        return _delete_rows(Embedding.objects.of_sources(list(source_ids)))

    @transaction.atomic
    def delete_by_filter(self, filter: EmbeddingFilter) -> int:
        """Delete what the filter matches exactly: unlike a search, a filter on agent or
        thread does not reach the shared rows of no agent or thread."""
        require_conditions(filter)
        queryset = Embedding.objects.all()
        if filter.agent_id is not None:
            queryset = queryset.filter(agent_id=filter.agent_id)
        if filter.thread_id is not None:
            queryset = queryset.filter(thread_id=filter.thread_id)
        if filter.user_id is not None:
            queryset = queryset.filter(user_id=filter.user_id)
        queryset = filtered(
            queryset,
            EmbeddingFilter(
                source_type=filter.source_type, index=filter.index, metadata=filter.metadata
            ),
        )
        return _delete_rows(queryset)

    @transaction.atomic
    def set_owner(self, thread_id: str, user_id: str | None) -> int:
        """Give the thread's embeddings its new user, in the column and the metadata."""
        changed = 0
        batch: list[Embedding] = []
        rows = Embedding.objects.filter(thread_id=thread_id).only("id", "metadata", "user_id")
        for row in rows.order_by("id").iterator(chunk_size=OWNER_BATCH_SIZE):
            metadata = dict(row.metadata or {})
            if user_id is None:
                metadata.pop(USER_ID_KEY, None)
            else:
                metadata[USER_ID_KEY] = user_id
            row.metadata, row.user_id = metadata, user_id
            batch.append(row)
            if len(batch) >= OWNER_BATCH_SIZE:
                changed += Embedding.objects.bulk_update(batch, ["metadata", "user_id"])
                batch = []
        if batch:
            changed += Embedding.objects.bulk_update(batch, ["metadata", "user_id"])
        keyword_index.move_thread_user(DocumentKind.EMBEDDING, thread_id, user_id)
        return changed

    def iter_source_ids(
        self, filter: EmbeddingFilter | None = None, *, batch_size: int = 1000
    ) -> Iterator[list[str]]:
        """Source ids in order, by keyset pages: each page is one short query."""
        base = filtered(Embedding.objects.all(), filter)
        after: str | None = None
        while True:
            page = base if after is None else base.filter(source_id__gt=after)
            ids = list(
                page.order_by("source_id")
                .values_list("source_id", flat=True)
                .distinct()[:batch_size]
            )
            if not ids:
                return
            yield ids
            after = ids[-1]
