"""Embeddings in a Qdrant collection: a server (``url``) or the client's embedded mode
(``path``: a folder, or ``":memory:"``).

Qdrant accepts only integer and UUID point ids, so a point's id is a UUID5 of the
embedding id; the ``emb_...`` id stays in the payload (``embeddingId``) and is what reads
and searches return. The collection uses cosine distance and is created on first use with
the configured size, or with the size of the first vector added.

``qdrant-client`` is an optional dependency (``pip install 'cogitator-memory[qdrant]'``),
imported only when a store is made.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from django.utils import timezone

from cogitator_memory.embeddings.models import (
    INDEX_KEY,
    THREAD_ID_KEY,
    USER_ID_KEY,
    new_embedding_id,
)
from cogitator_memory.embeddings.stores.base import check_vector
from cogitator_memory.embeddings.stores.qdrant_collection import QdrantCollection
from cogitator_memory.embeddings.stores.qdrant_payload import (
    INDEX,
    METADATA,
    PAGE_SIZE,
    REPLACE_LOOKUP_SIZE,
    SOURCE_ID,
    SOURCE_TYPE,
    THRESHOLD_SLACK,
    point_id,
    point_payload,
    scope_payload,
    stored_embedding,
)
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    NewEmbedding,
    SearchHit,
    StoredEmbedding,
    require_conditions,
)
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.jsondata import json_problem
from cogitator_memory.limits import check_limit

__all__ = ["QdrantEmbeddingStore", "point_id"]


class QdrantEmbeddingStore(QdrantCollection):
    """The ``EmbeddingStore`` seam over one Qdrant collection.

    Give ``url`` (with ``api_key`` if the server wants one) for a Qdrant server, or
    ``path`` for the embedded mode: a folder, kept between runs and used by one process
    at a time, or ``":memory:"``. ``dimensions`` fixes the vector size; without it the
    first vector added sets it.
    """

    # -- the EmbeddingStore seam ------------------------------------------------------

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

    def add(self, embeddings: Sequence[NewEmbedding]) -> list[StoredEmbedding]:
        """Store embeddings; one of the same (source type, source id, index) replaces the
        point stored, so adding the same source again never duplicates it.

        Raises ``InvalidInput`` for an empty, non-finite or zero vector, one of another
        size than the collection's (or the configured one), and metadata that is not
        JSON; nothing is written then.
        """
        vectors = [self._check_new(embedding) for embedding in embeddings]
        if not vectors:
            return []
        with self._lock:
            size = self._collection_size() or self.dimensions or vectors[0].size
            for vector in vectors:
                if vector.size != size:
                    raise InvalidInput(
                        {"vector": f"Expected {size} dimensions, got {vector.size}."}
                    )
            if self._ensure_collection(size) != size:
                raise InvalidInput(
                    {"vector": f"Expected {self._size} dimensions, got {vectors[0].size}."}
                )
            created_at = timezone.now()
            # One point per source: within a batch the last embedding of a source wins.
            latest: dict[tuple[str, str, str], tuple[NewEmbedding, np.ndarray, str]] = {}
            for embedding, vector in zip(embeddings, vectors, strict=True):
                payload_index = str(dict(embedding.metadata).get(INDEX_KEY) or "")
                key = (embedding.source_type, embedding.source_id, payload_index)
                latest.pop(key, None)
                latest[key] = (embedding, vector, embedding.id or new_embedding_id())
            points = []
            for embedding, vector, embedding_id in latest.values():
                norm = float(np.linalg.norm(vector.astype(np.float32)))
                points.append(
                    self._models.PointStruct(
                        id=point_id(embedding_id),
                        vector=vector.astype(np.float32).tolist(),
                        payload=point_payload(embedding, embedding_id, norm, created_at),
                    )
                )
            self._delete_replaced(list(latest), {point.id for point in points})
            for start in range(0, len(points), PAGE_SIZE):
                self._client.upsert(self.collection, points=points[start : start + PAGE_SIZE])
            return [stored_embedding(point.payload, dimensions=self._size) for point in points]

    def _delete_replaced(self, sources: list[tuple[str, str, str]], keep: set[str]) -> None:
        """Delete the points of these sources other than those about to be written."""
        models = self._models
        for start in range(0, len(sources), REPLACE_LOOKUP_SIZE):
            alternatives = [
                models.Filter(
                    must=[
                        self._match(SOURCE_TYPE, source_type),
                        self._match(SOURCE_ID, source_id),
                        self._match(INDEX, index),
                    ]
                )
                for source_type, source_id, index in sources[start : start + REPLACE_LOOKUP_SIZE]
            ]
            replaced = [
                record.id
                for record in self._scroll([models.Filter(should=alternatives)], with_payload=False)
                if str(record.id) not in keep
            ]
            self._delete_points(replaced)

    def search(
        self,
        vector: Sequence[float],
        *,
        limit: int = 10,
        threshold: float | None = None,
        filter: EmbeddingFilter | None = None,
    ) -> list[SearchHit]:
        """The ``limit`` embeddings most similar to ``vector`` (cosine), best first,
        among those ``filter`` admits.

        Raises ``InvalidInput`` for a bad vector or limit, and for a vector of another
        size than the collection's.
        """
        limit = check_limit(limit)
        query = check_vector(vector)
        conditions = self._conditions(filter, exact_scope=False)
        with self._lock:
            size = self._collection_size()
            if size is None:
                return []
            if query.size != size:
                raise InvalidInput({"vector": f"Expected {size} dimensions, got {query.size}."})
            response = self._client.query_points(
                self.collection,
                query=query.astype(np.float32).tolist(),
                query_filter=self._filter(conditions),
                limit=limit,
                with_payload=True,
                score_threshold=None if threshold is None else threshold - THRESHOLD_SLACK,
            )
        hits = []
        for point in response.points:
            score = min(1.0, max(-1.0, float(point.score)))
            if threshold is not None and score < threshold:
                continue
            hits.append(
                SearchHit(
                    embedding=stored_embedding(point.payload or {}, dimensions=self._size),
                    score=score,
                )
            )
        hits.sort(key=lambda hit: (-hit.score, hit.embedding.id))
        return hits

    def _records_of_sources(
        self,
        source_ids: Sequence[str],
        filter: EmbeddingFilter | None,
        **scroll: Any,
    ) -> list[Any]:
        """The points of these sources that ``filter`` admits (``scroll`` says what of
        them to read)."""
        conditions = self._conditions(filter, exact_scope=False)
        if not source_ids:
            return []
        conditions.append(
            self._models.FieldCondition(
                key=SOURCE_ID, match=self._models.MatchAny(any=list(source_ids))
            )
        )
        with self._lock:
            if self._collection_size() is None:
                return []
            return list(self._scroll(conditions, **scroll))

    def get_by_sources(
        self, source_ids: Sequence[str], *, filter: EmbeddingFilter | None = None
    ) -> list[StoredEmbedding]:
        """The embeddings of these sources that ``filter`` admits, with their vectors,
        ordered by source id and id."""
        found = [
            stored_embedding(record.payload, record.vector, dimensions=self._size)
            for record in self._records_of_sources(source_ids, filter, with_vectors=True)
        ]
        return sorted(found, key=lambda embedding: (embedding.source_id, embedding.id))

    def sources_present(
        self, source_ids: Sequence[str], *, filter: EmbeddingFilter | None = None
    ) -> set[str]:
        """The ids among ``source_ids`` with an embedding ``filter`` admits, read from the
        points' source ids alone (no vectors)."""
        records = self._records_of_sources(source_ids, filter, with_payload=[SOURCE_ID])
        return {str((record.payload or {})[SOURCE_ID]) for record in records}

    def delete(self, ids: Sequence[str]) -> int:
        """Delete embeddings by id; returns how many existed."""
        if not ids:
            return 0
        with self._lock:
            if self._collection_size() is None:
                return 0
            points = list({point_id(embedding_id) for embedding_id in ids})
            existing = [
                record.id
                for start in range(0, len(points), PAGE_SIZE)
                for record in self._client.retrieve(
                    self.collection, ids=points[start : start + PAGE_SIZE], with_payload=False
                )
            ]
            self._delete_points(existing)
        return len(existing)

    def delete_by_sources(self, source_ids: Sequence[str]) -> int:
        """Delete every embedding of these sources; returns how many."""
        if not source_ids:
            return 0
        condition = self._models.FieldCondition(
            key=SOURCE_ID, match=self._models.MatchAny(any=list(source_ids))
        )
        with self._lock:
            if self._collection_size() is None:
                return 0
            return self._delete_matching([condition])

    def delete_by_filter(self, filter: EmbeddingFilter) -> int:
        """Delete what the filter matches exactly: unlike a search, a filter on agent,
        thread or user does not reach the shared points of none. Raises
        ``InvalidInput`` for a filter without conditions."""
        require_conditions(filter)
        conditions = self._conditions(filter, exact_scope=True)
        with self._lock:
            if self._collection_size() is None:
                return 0
            return self._delete_matching(conditions)

    def set_owner(self, thread_id: str, user_id: str | None) -> int:
        """Give the thread's points its new user: the payload's userId, the metadata and
        its filter terms."""
        with self._lock:
            if self._collection_size() is None:
                return 0
            records = list(
                self._scroll([self._match(THREAD_ID_KEY, thread_id)], with_payload=[METADATA])
            )
            operations = []
            for record in records:
                metadata = dict((record.payload or {}).get(METADATA) or {})
                if user_id is None:
                    metadata.pop(USER_ID_KEY, None)
                else:
                    metadata[USER_ID_KEY] = user_id
                operations.append(
                    self._models.SetPayloadOperation(
                        set_payload=self._models.SetPayload(
                            payload=scope_payload(metadata), points=[record.id]
                        )
                    )
                )
            for start in range(0, len(operations), PAGE_SIZE):
                self._client.batch_update_points(
                    self.collection, update_operations=operations[start : start + PAGE_SIZE]
                )
        return len(records)

    def iter_source_ids(
        self, filter: EmbeddingFilter | None = None, *, batch_size: int = PAGE_SIZE
    ) -> Iterator[list[str]]:
        """Source ids a scroll page at a time (in point order)."""
        conditions = self._conditions(filter, exact_scope=False)
        offset = None
        while True:
            with self._lock:
                if self._collection_size() is None:
                    return
                records, offset = self._client.scroll(
                    self.collection,
                    scroll_filter=self._filter(conditions),
                    limit=batch_size,
                    offset=offset,
                    with_payload=[SOURCE_ID],
                    with_vectors=False,
                )
            ids = list(dict.fromkeys(str((r.payload or {})[SOURCE_ID]) for r in records))
            if ids:
                yield ids
            if offset is None:
                return
