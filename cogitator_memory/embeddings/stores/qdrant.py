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

import contextlib
import json
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from cogitator_memory.embeddings.models import (
    AGENT_ID_KEY,
    INDEX_KEY,
    THREAD_ID_KEY,
    USER_ID_KEY,
    new_embedding_id,
)
from cogitator_memory.embeddings.stores.base import check_vector
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    NewEmbedding,
    SearchHit,
    StoredEmbedding,
    VectorStatus,
    require_conditions,
)
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.jsondata import json_problem
from cogitator_memory.threads.json_types import KEY_PATTERN

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["POINT_ID_NAMESPACE", "QdrantEmbeddingStore", "point_id"]

# Point ids are uuid5(POINT_ID_NAMESPACE, embedding id): the same embedding always lands
# on the same point, in every process and after every restart. Never change it, or
# stored points can no longer be found by their embedding id.
POINT_ID_NAMESPACE = uuid.UUID("5b0c4b1e-7d0e-5c1a-9a55-3f0d2c6a8e41")

# Payload keys.
EMBEDDING_ID = "embeddingId"
SOURCE_TYPE = "source_type"
SOURCE_ID = "source_id"
INDEX = "index"
CONTENT = "content"
METADATA = "metadata"
CREATED_AT = "created_at"
# Qdrant normalises vectors of a cosine collection when they are stored; the length is
# kept so reads give back the vector that was added.
VECTOR_NORM = "vector_norm"
# "key=type:value" for every scalar top-level metadata value, matched as keywords. A
# native match cannot hold the filter's rules: it has no float or null values, and local
# mode compares with Python's ==, where 1 == 1.0 but the server keeps them apart. Here 1
# and 1.0 are one number, and neither is "1" or true, as in the database stores.
METADATA_TERMS = "metadata_terms"
SCOPE_KEYS = (AGENT_ID_KEY, THREAD_ID_KEY, USER_ID_KEY)

# Points read or deleted per request: bounds the size of one scroll or delete call.
PAGE_SIZE = 1000
# Sources replaced per lookup when a batch is added: one filter of this many
# (source type, source id, index) alternatives.
REPLACE_LOOKUP_SIZE = 100
# A stored cosine can fall a rounding error below the one computed for the threshold;
# the search asks Qdrant for a little more and then applies the threshold exactly.
THRESHOLD_SLACK = 1e-6


def point_id(embedding_id: str) -> str:
    """The Qdrant point id of an embedding id."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, embedding_id))


def _import_qdrant() -> tuple[type[QdrantClient], ModuleType]:
    try:
        from qdrant_client import QdrantClient
        from qdrant_client.http import models
    except ImportError as exc:
        raise ImproperlyConfigured(
            "The Qdrant embedding store needs the qdrant-client package: "
            "pip install 'cogitator-memory[qdrant]'"
        ) from exc
    return QdrantClient, models


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput({"limit": "limit must be a whole number of 1 or more."})
    return limit


def _scope_value(metadata: Mapping[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    return str(value) if value is not None else None


def _metadata_term(key: str, value: Any) -> str | None:
    """The keyword a scalar metadata value is matched by; None for objects and arrays."""
    if value is None:
        return f"{key}=null"
    if value is True:
        return f"{key}=true"
    if value is False:
        return f"{key}=false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int | float):
        return f"{key}=number:{json.dumps(value)}"
    if isinstance(value, str):
        return f"{key}=string:{json.dumps(value, ensure_ascii=False)}"
    return None


def _filter_term(key: Any, value: Any) -> str:
    """The keyword of one ``filter.metadata`` condition; refuses what the database stores
    refuse, with the same messages."""
    if isinstance(value, dict | list):
        raise InvalidInput(
            {"filter": f"Filter value of {key!r} must be a text, number, boolean or null."}
        )
    problem = json_problem(value)
    if problem:
        raise InvalidInput({"filter": f"Filter value of {key!r}: {problem}"})
    if not isinstance(key, str) or not KEY_PATTERN.match(key):
        raise InvalidInput({"filter": f"Filter key {key!r}: use letters, digits and _ : @ - only."})
    term = _metadata_term(key, value)
    if term is None:  # pragma: no cover - every JSON scalar has a term
        raise InvalidInput({"filter": f"Filter value of {key!r} cannot be matched."})
    return term


class QdrantEmbeddingStore:
    """The ``EmbeddingStore`` seam over one Qdrant collection.

    Give ``url`` (with ``api_key`` if the server wants one) for a Qdrant server, or
    ``path`` for the embedded mode: a folder, kept between runs and used by one process
    at a time, or ``":memory:"``. ``dimensions`` fixes the vector size; without it the
    first vector added sets it.
    """

    def __init__(
        self,
        *,
        dimensions: int | None = None,
        url: str | None = None,
        path: str | None = None,
        api_key: str | None = None,
        collection: str | None = "cogitator_memory",
    ) -> None:
        client_class, self._models = _import_qdrant()
        if (url is None) == (path is None):
            raise ImproperlyConfigured(
                "The Qdrant embedding store needs either url (a Qdrant server) or path "
                "(a folder, or ':memory:', for the embedded mode), not both or neither."
            )
        self.dimensions = dimensions
        self.collection = collection or "cogitator_memory"
        self.is_local = path is not None
        if path is not None:
            # The embedded mode keeps its points in SQLite; the lock below serialises
            # access, so the store may be shared by the threads of one process.
            self._client = client_class(
                location=path if path == ":memory:" else None,
                path=None if path == ":memory:" else path,
                force_disable_check_same_thread=True,
            )
        else:
            # No version check against the server here: making a store does no network
            # I/O, so an unreachable server shows in vector_status() and the calls that
            # need it, not as a warning wherever a store is built.
            self._client = client_class(url=url, api_key=api_key, check_compatibility=False)
        self._lock: contextlib.AbstractContextManager[Any] = (
            threading.RLock() if self.is_local else contextlib.nullcontext()
        )
        # The collection's vector size once it is known to exist.
        self._size: int | None = None

    def close(self) -> None:
        """Release the client (in the embedded mode, the folder's lock)."""
        with self._lock:
            self._client.close()

    # -- the collection ---------------------------------------------------------------

    def _collection_size(self) -> int | None:
        """The vector size of the collection, or None when it does not exist yet."""
        if self._size is None and self._client.collection_exists(self.collection):
            vectors = self._client.get_collection(self.collection).config.params.vectors
            if not isinstance(vectors, self._models.VectorParams):
                raise ImproperlyConfigured(
                    f"Qdrant collection {self.collection!r} has named vectors; the store "
                    "needs a collection of one unnamed vector."
                )
            self._size = int(vectors.size)
        return self._size

    def _ensure_collection(self, size: int) -> int:
        existing = self._collection_size()
        if existing is not None:
            return existing
        try:
            self._client.create_collection(
                self.collection,
                vectors_config=self._models.VectorParams(
                    size=size, distance=self._models.Distance.COSINE
                ),
            )
        except Exception:
            # Another process may have created it first; its size is the one that holds.
            self._size = None
            created_elsewhere = self._collection_size()
            if created_elsewhere is None:
                raise
            return created_elsewhere
        if not self.is_local:
            # Payload indexes serve the filters on a server; the embedded mode has none.
            keyword = self._models.PayloadSchemaType.KEYWORD
            for field in (
                EMBEDDING_ID,
                SOURCE_TYPE,
                SOURCE_ID,
                INDEX,
                METADATA_TERMS,
                *SCOPE_KEYS,
            ):
                self._client.create_payload_index(self.collection, field, field_schema=keyword)
        self._size = size
        return size

    def vector_status(self) -> VectorStatus:
        """Available, with the collection's size (or the configured one before the
        collection exists); unavailable when the collection has another size than the
        configured one, or the server cannot be reached."""
        try:
            with self._lock:
                self._size = None
                size = self._collection_size()
        except Exception as exc:
            return VectorStatus(False, self.dimensions, f"Qdrant is unavailable: {exc}")
        if size is not None and self.dimensions is not None and size != self.dimensions:
            return VectorStatus(
                False,
                self.dimensions,
                f"Qdrant collection {self.collection!r} has {size} dimensions; the store "
                f"is configured for {self.dimensions}",
            )
        return VectorStatus(True, size if size is not None else self.dimensions)

    # -- filters ----------------------------------------------------------------------

    def _match(self, key: str, value: Any) -> Any:
        return self._models.FieldCondition(key=key, match=self._models.MatchValue(value=value))

    def _value_or_none(self, key: str, value: str) -> Any:
        """``key`` equals ``value``, or the point has none (missing or null)."""
        models = self._models
        return models.Filter(
            should=[
                self._match(key, value),
                models.IsEmptyCondition(is_empty=models.PayloadField(key=key)),
            ]
        )

    def _conditions(self, filter: EmbeddingFilter | None, *, exact_scope: bool) -> list[Any]:
        """Qdrant conditions of a filter. Searches and reads admit the points of no
        agent, thread or user beside the named one; ``exact_scope`` (deletes) does not."""
        if filter is None:
            return []
        conditions: list[Any] = []
        scopes = zip(SCOPE_KEYS, (filter.agent_id, filter.thread_id, filter.user_id), strict=True)
        for key, value in scopes:
            if value is None:
                continue
            conditions.append(
                self._match(key, value) if exact_scope else self._value_or_none(key, value)
            )
        if filter.source_type is not None:
            conditions.append(self._match(SOURCE_TYPE, filter.source_type))
        if filter.index is not None:
            conditions.append(self._match(INDEX, filter.index))
        for key, value in (filter.metadata or {}).items():
            conditions.append(self._match(METADATA_TERMS, _filter_term(key, value)))
        return conditions

    def _filter(self, conditions: list[Any]) -> Any:
        return self._models.Filter(must=conditions) if conditions else None

    def _scroll(
        self, conditions: list[Any], *, with_payload: bool = True, with_vectors: bool = False
    ) -> Iterator[Any]:
        offset = None
        while True:
            records, offset = self._client.scroll(
                self.collection,
                scroll_filter=self._filter(conditions),
                limit=PAGE_SIZE,
                offset=offset,
                with_payload=with_payload,
                with_vectors=with_vectors,
            )
            yield from records
            if offset is None:
                return

    def _delete_points(self, ids: Sequence[Any]) -> None:
        for start in range(0, len(ids), PAGE_SIZE):
            self._client.delete(
                self.collection,
                points_selector=self._models.PointIdsList(
                    points=list(ids[start : start + PAGE_SIZE])
                ),
            )

    def _delete_matching(self, conditions: list[Any]) -> int:
        ids = [record.id for record in self._scroll(conditions, with_payload=False)]
        self._delete_points(ids)
        return len(ids)

    # -- reading points ---------------------------------------------------------------

    def _stored(self, payload: Mapping[str, Any], vector: Any = None) -> StoredEmbedding:
        created_at = payload.get(CREATED_AT)
        values: list[float] | None = None
        if vector is not None:
            norm = np.float32(payload.get(VECTOR_NORM) or 1.0)
            values = (np.asarray(vector, dtype=np.float32) * norm).astype(np.float32).tolist()
        return StoredEmbedding(
            id=str(payload[EMBEDDING_ID]),
            source_type=str(payload[SOURCE_TYPE]),
            source_id=str(payload[SOURCE_ID]),
            content=str(payload.get(CONTENT) or ""),
            metadata=json.loads(json.dumps(payload.get(METADATA) or {})),
            dimensions=self._size or (len(values) if values else 0),
            created_at=datetime.fromisoformat(created_at) if created_at else None,
            vector=values,
        )

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

    def _payload(
        self, embedding: NewEmbedding, embedding_id: str, norm: float, created_at: datetime
    ) -> dict[str, Any]:
        # A deep copy through JSON: nothing the caller holds is shared with the store.
        metadata: dict[str, Any] = json.loads(json.dumps(dict(embedding.metadata)))
        terms = [_metadata_term(key, value) for key, value in metadata.items()]
        return {
            EMBEDDING_ID: embedding_id,
            SOURCE_TYPE: embedding.source_type,
            SOURCE_ID: embedding.source_id,
            INDEX: str(metadata.get(INDEX_KEY) or ""),
            CONTENT: embedding.content,
            METADATA: metadata,
            METADATA_TERMS: [term for term in terms if term is not None],
            **{key: _scope_value(metadata, key) for key in SCOPE_KEYS},
            CREATED_AT: created_at.isoformat(),
            VECTOR_NORM: norm,
        }

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
                        payload=self._payload(embedding, embedding_id, norm, created_at),
                    )
                )
            self._delete_replaced(list(latest), {point.id for point in points})
            for start in range(0, len(points), PAGE_SIZE):
                self._client.upsert(self.collection, points=points[start : start + PAGE_SIZE])
            return [self._stored(point.payload) for point in points]

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
        limit = _check_limit(limit)
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
            hits.append(SearchHit(embedding=self._stored(point.payload or {}), score=score))
        hits.sort(key=lambda hit: (-hit.score, hit.embedding.id))
        return hits

    def get_by_sources(
        self, source_ids: Sequence[str], *, filter: EmbeddingFilter | None = None
    ) -> list[StoredEmbedding]:
        """The embeddings of these sources that ``filter`` admits, with their vectors,
        ordered by source id and id."""
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
            found = [
                self._stored(record.payload, record.vector)
                for record in self._scroll(conditions, with_vectors=True)
            ]
        return sorted(found, key=lambda embedding: (embedding.source_id, embedding.id))

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
