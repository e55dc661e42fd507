"""A Qdrant collection the embedding store keeps its points in: the client (a server,
or the embedded mode), the collection's size, filters and paged reads and deletes."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.embeddings.stores.qdrant_payload import (
    EMBEDDING_ID,
    INDEX,
    METADATA_TERMS,
    PAGE_SIZE,
    SCOPE_KEYS,
    SOURCE_ID,
    SOURCE_TYPE,
    filter_term,
)
from cogitator_memory.embeddings.types import EmbeddingFilter, VectorStatus

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["QdrantCollection"]


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


class QdrantCollection:
    """One collection of one unnamed cosine vector per point, created on first use."""

    # Points live outside the app's database: changes follow a commit (the outbox).
    transactional = False

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
            conditions.append(self._match(METADATA_TERMS, filter_term(key, value)))
        return conditions

    def _filter(self, conditions: list[Any]) -> Any:
        return self._models.Filter(must=conditions) if conditions else None

    def _scroll(
        self,
        conditions: list[Any],
        *,
        with_payload: bool | list[str] = True,
        with_vectors: bool = False,
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
