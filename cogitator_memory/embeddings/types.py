"""The data the embedding stores take and give back."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from cogitator_memory.exceptions import InvalidInput

# Metadata keys that scope an embedding, mirrored into indexed columns
# (``embeddings/models.py``).
AGENT_ID_KEY = "agentId"
THREAD_ID_KEY = "threadId"
USER_ID_KEY = "userId"
INDEX_KEY = "index"


@dataclass(frozen=True)
class NewEmbedding:
    """A vector to store. ``metadata`` may carry agentId, threadId, userId and index; an
    embedding with agentId is seen only by that agent, one without by every agent."""

    source_type: str
    source_id: str
    vector: Sequence[float]
    content: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class StoredEmbedding:
    id: str
    source_type: str
    source_id: str
    content: str
    metadata: dict[str, Any]
    dimensions: int
    created_at: datetime | None = None
    vector: list[float] | None = None


@dataclass(frozen=True)
class SearchHit:
    """A stored embedding and its score: cosine similarity for vector search, the rank
    score of keyword search."""

    embedding: StoredEmbedding
    score: float


@dataclass(frozen=True)
class EmbeddingFilter:
    """Which embeddings a search, delete or read may touch.

    ``agent_id`` / ``thread_id``: that agent's (thread's) embeddings and those of none;
    ``metadata``: exact values of other metadata keys; ``source_type`` and ``index``
    match exactly.
    """

    agent_id: str | None = None
    thread_id: str | None = None
    user_id: str | None = None
    source_type: str | None = None
    index: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return (
            not any((self.agent_id, self.thread_id, self.user_id, self.source_type, self.index))
            and not self.metadata
        )


@dataclass(frozen=True)
class VectorStatus:
    """``available`` and ``dimensions``, or why vectors cannot be searched.

    ``missing_indexes``: sizes of stored (or configured) vectors whose index the store
    lacks; their searches still return the right rows, by reading every row of the size,
    and slow down as the table grows. ``hint`` says, in a sentence, what to run about it.
    """

    available: bool
    dimensions: int | None = None
    reason: str | None = None
    missing_indexes: tuple[int, ...] = ()
    hint: str | None = None


class EmbeddingStore(Protocol):
    """The seam every vector store implements (pgvector, exact scan, Qdrant).

    ``transactional``: the store keeps its rows in the app's database, so its writes
    take part in the caller's transaction (exact, pgvector); a store outside it (Qdrant)
    is changed after commit, through the outbox.
    """

    transactional: bool

    def add(self, embeddings: Sequence[NewEmbedding]) -> list[StoredEmbedding]: ...

    def search(
        self,
        vector: Sequence[float],
        *,
        limit: int = 10,
        threshold: float | None = None,
        filter: EmbeddingFilter | None = None,
    ) -> list[SearchHit]: ...

    def get_by_sources(
        self, source_ids: Sequence[str], *, filter: EmbeddingFilter | None = None
    ) -> list[StoredEmbedding]: ...

    def delete(self, ids: Sequence[str]) -> int: ...

    def delete_by_sources(self, source_ids: Sequence[str]) -> int: ...

    def delete_by_filter(self, filter: EmbeddingFilter) -> int: ...

    def set_owner(self, thread_id: str, user_id: str | None) -> int:
        """Give every embedding of this thread the thread's new user (``userId`` in its
        metadata, none when ``user_id`` is None); returns how many changed."""
        ...

    def iter_source_ids(
        self, filter: EmbeddingFilter | None = None, *, batch_size: int = 1000
    ) -> Iterator[list[str]]:
        """The source ids of the embeddings ``filter`` admits, a batch at a time, each id
        once within a batch (the order is the store's)."""
        ...

    def vector_status(self) -> VectorStatus: ...


def require_conditions(filter: EmbeddingFilter) -> None:
    """``delete_by_filter`` never deletes everything by accident."""
    if filter.is_empty:
        raise InvalidInput({"filter": "delete_by_filter needs at least one condition."})
