"""Helpers of the pgvector tests: rows stored fast, indexes read from the catalogue, and
searches with the plan of the statement they sent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.stores.base import vector_bytes
from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.embeddings.stores.pgvector_native import vector_text
from cogitator_memory.embeddings.types import NewEmbedding, SearchHit

TABLE = Embedding._meta.db_table


def random_unit(rng: np.random.Generator, dimensions: int) -> np.ndarray:
    vector = rng.normal(size=dimensions)
    return vector / np.linalg.norm(vector)


def near(vector: np.ndarray, rng: np.random.Generator, noise: float) -> list[float]:
    """A vector close to ``vector``: the smaller the noise, the higher the similarity."""
    return (vector + rng.normal(scale=noise, size=vector.size)).tolist()


def new(source_id: str, vector: Sequence[float], **metadata: Any) -> NewEmbedding:
    return NewEmbedding("item", source_id, list(vector), content=source_id, metadata=metadata)


def sources(hits: list[SearchHit]) -> list[str]:
    return [hit.embedding.source_id for hit in hits]


def index_definition(name: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        row = cursor.fetchone()
    return row[0] if row else None


def index_is_valid(name: str) -> bool | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s",
            [name],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def drop_indexes(*names: str) -> None:
    """Indexes outlive the flush of a transactional test; later tests expect none."""
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(f"DROP INDEX IF EXISTS {name}")


def prefer_indexes() -> None:
    """Make the planner take an index where one can serve the query, for the rest of the
    test's transaction. On tables of a few thousand rows it would rather read them all and
    sort, which a large table does not allow; with scans and sorts made costly, a plan
    still reading the whole table means no index matches the query's ORDER BY."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")


def search_with_plan(
    store: PgVectorEmbeddingStore, vector: Sequence[float], **options: Any
) -> tuple[list[SearchHit], str]:
    """Search, then EXPLAIN the very statement the store sent, in the same transaction
    (so with the settings the store made for it)."""
    with CaptureQueriesContext(connection) as queries:
        hits = store.search(vector, **options)
    statement = next(q["sql"] for q in queries.captured_queries if "<=>" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {statement}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    return hits, plan


def store_rows(
    vectors: np.ndarray, metadata: Sequence[dict[str, Any]], *, with_index: bool = True
) -> list[str]:
    """Many rows quickly: inserted with their native vectors in one statement, then the
    index is built over them (adding 3,000 rows one index insert at a time takes
    seconds). Not through an UPDATE of the native column: an index created in the same
    transaction after HOT updates is not usable until the transaction ends."""
    source_ids = [f"s{number:05d}" for number in range(len(vectors))]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (id, source_type, source_id, index_name, content, "
            "dimensions, vector, metadata, created_at, embedding) "
            "SELECT 'emb_' || s, 'item', s, '', '', %s, v, m::jsonb, now(), e::vector "
            "FROM unnest(%s::text[], %s::bytea[], %s::text[], %s::text[]) AS r(s, v, m, e)",
            [
                vectors.shape[1],
                source_ids,
                [vector_bytes(vector) for vector in vectors],
                [json.dumps(meta) for meta in metadata],
                [vector_text(vector) for vector in vectors],
            ],
        )
    if with_index:
        assert PgVectorEmbeddingStore().ensure_index(vectors.shape[1], concurrently=False)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TABLE}")
    return source_ids
