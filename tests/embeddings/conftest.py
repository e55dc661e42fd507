"""Stores of the embedding tests, and a short way to write an embedding to add."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from django.db import connection

from cogitator_memory.embeddings.schema import vector_support
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.stores.qdrant import QdrantEmbeddingStore
from cogitator_memory.embeddings.types import NewEmbedding

# Small vectors keep the expected cosines easy to read: [1, 0, 0] against [1, 1, 0] is
# 0.7071.
DIMENSIONS = 3

MakeEmbedding = Callable[..., NewEmbedding]


def make_embedding(
    source_id: str,
    vector: Sequence[float],
    *,
    source_type: str = "message",
    content: str = "",
    id: str | None = None,
    **metadata: Any,
) -> NewEmbedding:
    return NewEmbedding(
        source_type=source_type,
        source_id=source_id,
        vector=list(vector),
        content=content or f"text of {source_id}",
        metadata=metadata,
        id=id,
    )


@pytest.fixture
def new() -> MakeEmbedding:
    """``new("m1", [1, 0, 0], agentId="a1")``: an embedding of source m1 to add."""
    return make_embedding


@pytest.fixture
def exact_store(db: None) -> ExactEmbeddingStore:
    return ExactEmbeddingStore(dimensions=DIMENSIONS)


@pytest.fixture
def pgvector_store(db: None) -> Any:
    from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore

    support = vector_support(connection)
    # The embedded PostgreSQL of the suite ships pgvector: a missing column is a failure
    # of the migration, not a reason to skip.
    assert support.available, f"pgvector is not available: {support.reason}"
    return PgVectorEmbeddingStore(dimensions=DIMENSIONS)


@pytest.fixture
def qdrant_store() -> Iterator[QdrantEmbeddingStore]:
    store = QdrantEmbeddingStore(dimensions=DIMENSIONS, path=":memory:")
    yield store
    store.close()
