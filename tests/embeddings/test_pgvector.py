"""The pgvector store on embedded PostgreSQL: HNSW indexes per dimension (halfvec from
2,001 dimensions, none above 4,000) built outside writes, query plans that use them (and
exact scans without them), large limits and selective filters, dimension mismatches and
scopes."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.schema import AddVectorIndexesWhereAvailable
from cogitator_memory.embeddings.stores.base import vector_bytes
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.stores.pgvector import (
    PgVectorEmbeddingStore,
    VectorsUnavailable,
)
from cogitator_memory.embeddings.stores.pgvector_native import vector_text
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    NewEmbedding,
    SearchHit,
    VectorStatus,
)
from cogitator_memory.exceptions import InvalidInput

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db]

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


# --- search and scores -----------------------------------------------------------------


def test_search_ranks_by_cosine_similarity_with_score_one_minus_cosine_distance() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("same", [2, 0, 0]), new("diagonal", [1, 1, 0]), new("orthogonal", [0, 3, 0])])

    # when
    hits = store.search([1, 0, 0], limit=3)

    # then
    assert sources(hits) == ["same", "diagonal", "orthogonal"]
    assert [hit.score for hit in hits] == pytest.approx([1.0, 2**-0.5, 0.0], abs=1e-6)


def test_search_compares_only_vectors_of_the_query_size() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("three", [1, 0, 0]), new("four", [1, 0, 0, 0])])

    # when
    hits = store.search([1, 0, 0, 0], limit=10)

    # then
    assert sources(hits) == ["four"]


def test_threshold_drops_hits_scoring_below_it() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("same", [1, 0]), new("diagonal", [1, 1]), new("opposite", [-1, 0])])

    # when
    hits = store.search([1, 0], limit=10, threshold=0.5)

    # then
    assert sources(hits) == ["same", "diagonal"]


def test_the_native_column_holds_exactly_the_stored_float32_values() -> None:
    # given: values that need all nine significant digits of a float32
    rng = np.random.default_rng(8)
    vector = rng.normal(scale=1e-3, size=64).astype("<f4")
    store = PgVectorEmbeddingStore()

    # when
    added = store.add([new("exact", vector.tolist())])

    # then
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT embedding::real[] FROM {TABLE} WHERE id = %s", [added[0].id])
        native = np.array(cursor.fetchone()[0], dtype="<f4")
    assert native.tobytes() == vector.tobytes()


def test_adding_a_source_again_replaces_its_searchable_vector() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("moved", [1, 0]), new("other", [0.6, 0.8])])

    # when
    store.add([new("moved", [0, 1])])

    # then
    hits = store.search([0, 1], limit=2)
    assert sources(hits) == ["moved", "other"]
    assert hits[0].score == pytest.approx(1.0)


def test_a_limit_below_one_is_refused() -> None:
    # given
    store = PgVectorEmbeddingStore()

    # when
    with pytest.raises(InvalidInput) as raised:
        store.search([1, 0], limit=0)

    # then
    assert raised.value.errors == {"limit": ["limit must be a whole number of 1 or more."]}


def test_vectors_above_16000_dimensions_are_refused() -> None:
    # given
    store = PgVectorEmbeddingStore()

    # when
    with pytest.raises(InvalidInput) as raised:
        store.add([new("huge", [1.0] * 16001)])

    # then
    assert raised.value.errors == {
        "vector": ["pgvector holds at most 16000 dimensions, got 16001."]
    }
    assert not Embedding.objects.exists()


def test_halfvec_sized_vectors_with_values_beyond_half_precision_are_refused() -> None:
    # given
    store = PgVectorEmbeddingStore()
    vector = [1.0] * 3072
    vector[5] = 70000.0

    # when
    with pytest.raises(InvalidInput) as raised:
        store.add([new("too-large", vector)])

    # then
    assert raised.value.errors == {
        "vector": [
            "Vectors of 2001 to 4000 dimensions are indexed as halfvec, whose values lie "
            "within +-65504."
        ]
    }


# --- indexes and plans -----------------------------------------------------------------


def test_adding_vectors_of_a_new_size_builds_no_index() -> None:
    # given
    store = PgVectorEmbeddingStore()

    # when
    with CaptureQueriesContext(connection) as queries:
        store.add([new("first", [1, 0, 0])])

    # then
    statements = [q["sql"] for q in queries.captured_queries]
    assert not [sql for sql in statements if "CREATE INDEX" in sql or "advisory" in sql]
    assert index_definition("cm_emb_hnsw_3") is None
    assert sources(store.search([1, 0, 0])) == ["first"]


def test_ensure_index_defines_a_partial_hnsw_index_of_the_size_with_its_build_settings() -> None:
    # given
    store = PgVectorEmbeddingStore()

    # when
    built = store.ensure_index(3, concurrently=False)

    # then
    assert built is True
    assert index_definition("cm_emb_hnsw_3") == (
        f"CREATE INDEX cm_emb_hnsw_3 ON public.{TABLE} USING hnsw "
        "(((embedding)::vector(3)) vector_cosine_ops) WITH (m='16', ef_construction='64') "
        "WHERE (dimensions = 3)"
    )


def test_ensure_index_of_a_size_that_has_it_builds_nothing() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.ensure_index(3, concurrently=False)

    # when
    with CaptureQueriesContext(connection) as queries:
        built = store.ensure_index(3, concurrently=False)

    # then
    assert built is True
    assert not [q["sql"] for q in queries.captured_queries if "CREATE INDEX" in q["sql"]]


def test_ensure_index_concurrently_inside_a_transaction_is_refused() -> None:
    # given: the test runs in a transaction
    store = PgVectorEmbeddingStore()

    # when
    with pytest.raises(TransactionManagementError) as raised:
        store.ensure_index(3)

    # then
    assert str(raised.value) == (
        "cm_emb_hnsw_3 cannot be built concurrently inside a transaction: build it "
        "outside transaction.atomic(), or with concurrently=False within it."
    )
    assert index_definition("cm_emb_hnsw_3") is None


def test_ensure_index_refuses_a_size_pgvector_cannot_hold() -> None:
    # given
    store = PgVectorEmbeddingStore()

    # when
    with pytest.raises(InvalidInput) as raised:
        store.ensure_index(16001, concurrently=False)

    # then
    assert raised.value.errors == {"dimensions": ["dimensions must lie within 1..16000."]}


def test_a_size_without_its_index_is_searched_exactly_and_finds_what_the_index_finds() -> None:
    # given: 200 rows of 16 dimensions and no index for them
    rng = np.random.default_rng(9)
    vectors = np.array([random_unit(rng, 16) for _ in range(200)])
    store_rows(vectors, [{}] * len(vectors), with_index=False)
    store = PgVectorEmbeddingStore()
    query = vectors[10] + rng.normal(scale=0.05, size=16)
    expected = [f"s{i:05d}" for i in np.argsort(-(vectors @ query))[:10]]
    prefer_indexes()

    # when
    exact_hits, exact_plan = search_with_plan(store, query.tolist(), limit=10)
    store.ensure_index(16, concurrently=False)
    indexed_hits, indexed_plan = search_with_plan(store, query.tolist(), limit=10)

    # then
    assert "hnsw" not in exact_plan
    assert sources(exact_hits) == expected
    assert "Index Scan using cm_emb_hnsw_16" in indexed_plan
    assert sources(indexed_hits)[0] == expected[0] == "s00010"


def test_the_query_plan_searches_the_hnsw_index_of_the_query_size() -> None:
    # given
    rng = np.random.default_rng(7)
    vectors = np.array([random_unit(rng, 16) for _ in range(200)])
    store_rows(vectors, [{}] * len(vectors))

    prefer_indexes()

    # when
    hits, plan = search_with_plan(PgVectorEmbeddingStore(), vectors[10].tolist(), limit=10)

    # then
    assert "Index Scan using cm_emb_hnsw_16" in plan
    assert sources(hits)[0] == "s00010"


def test_vectors_of_3072_dimensions_are_indexed_and_searched_as_halfvec() -> None:
    # given
    rng = np.random.default_rng(3)
    target = random_unit(rng, 3072)
    store = PgVectorEmbeddingStore()
    store.ensure_index(3072, concurrently=False)
    store.add(
        [
            new("close", near(target, rng, 0.001)),
            new("far", random_unit(rng, 3072).tolist()),
            new("farther", (-target).tolist()),
        ]
    )

    prefer_indexes()

    # when
    hits, plan = search_with_plan(store, target.tolist(), limit=3)

    # then
    definition = index_definition("cm_emb_hnsw_3072")
    assert definition is not None
    assert "USING hnsw (((embedding)::halfvec(3072)) halfvec_cosine_ops)" in definition
    assert definition.endswith("WHERE (dimensions = 3072)")
    assert "Index Scan using cm_emb_hnsw_3072" in plan
    assert sources(hits) == ["close", "far", "farther"]
    assert hits[0].score > 0.99
    assert hits[2].score == pytest.approx(-1.0, abs=1e-3)


def test_vectors_above_4000_dimensions_are_searched_exactly_without_an_index() -> None:
    # given
    rng = np.random.default_rng(4)
    target = random_unit(rng, 4500)
    store = PgVectorEmbeddingStore()
    assert store.ensure_index(4500, concurrently=False) is False
    store.add([new("far", random_unit(rng, 4500).tolist()), new("close", near(target, rng, 0.001))])

    prefer_indexes()

    # when
    hits, plan = search_with_plan(store, target.tolist(), limit=2)

    # then
    assert index_definition("cm_emb_hnsw_4500") is None
    assert "hnsw" not in plan
    assert sources(hits) == ["close", "far"]
    assert hits[0].score > 0.99


def test_search_raises_ef_search_to_the_limit_and_turns_on_iterative_scans() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("one", [1, 0])])

    # when
    store.search([1, 0], limit=300)

    # then: the settings are the transaction's own (SET LOCAL); the test runs in one.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan')"
        )
        assert cursor.fetchone() == ("300", "relaxed_order")


def test_a_small_limit_keeps_ef_search_at_least_40() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("one", [1, 0])])

    # when
    store.search([1, 0], limit=5)

    # then
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search')")
        assert cursor.fetchone() == ("40",)


def test_a_store_can_keep_more_candidates_than_the_default_floor() -> None:
    # given
    store = PgVectorEmbeddingStore(min_ef_search=100)
    store.add([new("one", [1, 0])])

    # when
    store.search([1, 0], limit=5)

    # then
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.ef_search')")
        assert cursor.fetchone() == ("100",)


def test_a_floor_of_candidates_outside_what_pgvector_accepts_is_refused() -> None:
    # given
    floor = 1001

    # when
    with pytest.raises(InvalidInput) as raised:
        PgVectorEmbeddingStore(min_ef_search=floor)

    # then
    assert raised.value.errors == {"min_ef_search": ["min_ef_search must lie within 1..1000."]}


def test_a_limit_above_the_default_ef_search_returns_that_many_hits_through_the_index() -> None:
    # given
    rng = np.random.default_rng(5)
    vectors = np.array([random_unit(rng, 32) for _ in range(3000)])
    store_rows(vectors, [{}] * len(vectors))

    prefer_indexes()

    # when
    hits, plan = search_with_plan(PgVectorEmbeddingStore(), vectors[0].tolist(), limit=100)

    # then
    assert "Index Scan using cm_emb_hnsw_32" in plan, plan
    assert len(hits) == 100
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_a_filter_keeping_one_row_in_fifty_still_returns_every_match_at_limit_100() -> None:
    # given: 3,000 rows of which 60 match the filter
    rng = np.random.default_rng(6)
    vectors = np.array([random_unit(rng, 32) for _ in range(3000)])
    kinds = [{"kind": "keep" if number % 50 == 0 else "drop"} for number in range(3000)]
    ids = store_rows(vectors, kinds)
    kept = {source for source, meta in zip(ids, kinds, strict=True) if meta["kind"] == "keep"}
    # Through the index, as on a large table: a graph search that stopped after
    # ef_search candidates would find about 2 of the 60.
    prefer_indexes()

    # when
    hits, plan = search_with_plan(
        PgVectorEmbeddingStore(),
        vectors[1].tolist(),
        limit=100,
        filter=EmbeddingFilter(metadata={"kind": "keep"}),
    )

    # then
    assert "Index Scan using cm_emb_hnsw_32" in plan
    assert set(sources(hits)) == kept
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


@pytest.mark.django_db(transaction=True)
def test_ensure_index_outside_a_transaction_builds_concurrently_an_index_searches_use() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("near", [1, 0, 0, 0, 0.1]), new("far", [0, 1, 0, 0, 0])])

    try:
        # when
        with CaptureQueriesContext(connection) as queries:
            built = store.ensure_index(5)

        # then
        assert built is True
        assert [q["sql"] for q in queries.captured_queries if "CREATE INDEX" in q["sql"]] == [
            'CREATE INDEX CONCURRENTLY "cm_emb_hnsw_5" ON "cogitator_memory_embedding" USING '
            'hnsw ((("embedding")::vector(5)) vector_cosine_ops) WITH (m = 16, '
            'ef_construction = 64) WHERE "dimensions" = 5'
        ]
        assert index_is_valid("cm_emb_hnsw_5") is True
        assert store.vector_status() == VectorStatus(available=True, dimensions=5)
        with transaction.atomic():
            prefer_indexes()
            hits, plan = search_with_plan(store, [1, 0, 0, 0, 0], limit=2)
        assert "Index Scan using cm_emb_hnsw_5" in plan
        assert sources(hits) == ["near", "far"]
    finally:
        drop_indexes("cm_emb_hnsw_5")


@pytest.mark.django_db(transaction=True)
def test_ensure_index_drops_and_builds_again_an_index_a_failed_build_left_invalid() -> None:
    # given: the index of size 5, marked invalid as a stopped concurrent build leaves it
    store = PgVectorEmbeddingStore()
    store.add([new("one", [1, 0, 0, 0, 0])])
    try:
        store.ensure_index(5)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE pg_index SET indisvalid = false "
                "WHERE indexrelid = 'cm_emb_hnsw_5'::regclass"
            )
        assert store.vector_status().missing_indexes == (5,)

        # when
        with CaptureQueriesContext(connection) as queries:
            built = store.ensure_index(5)

        # then
        assert built is True
        statements = [q["sql"] for q in queries.captured_queries if "INDEX" in q["sql"]]
        assert statements[0] == 'DROP INDEX CONCURRENTLY IF EXISTS "cm_emb_hnsw_5"'
        assert statements[1].startswith('CREATE INDEX CONCURRENTLY "cm_emb_hnsw_5"')
        assert index_is_valid("cm_emb_hnsw_5") is True
        assert store.vector_status().missing_indexes == ()
    finally:
        drop_indexes("cm_emb_hnsw_5")


@pytest.mark.django_db(transaction=True)
def test_builders_racing_for_one_index_take_turns_and_share_it() -> None:
    # given: builders released together, each building the index of size 7
    PgVectorEmbeddingStore().add([new("seven", [1.0] * 7)])
    builders = 4
    start = threading.Barrier(builders)
    errors: list[BaseException] = []
    built: list[bool] = []

    def build() -> None:
        try:
            start.wait(timeout=10)
            built.append(PgVectorEmbeddingStore().ensure_index(7))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=build) for _ in range(builders)]

    # when
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        # then
        assert errors == []
        assert built == [True] * builders
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'cm_emb_hnsw_7'")
            assert cursor.fetchone() == (1,)
        assert index_is_valid("cm_emb_hnsw_7") is True
    finally:
        drop_indexes("cm_emb_hnsw_7")


def test_the_migration_builds_the_index_of_the_configured_size_and_takes_it_back() -> None:
    # given
    operation = AddVectorIndexesWhereAvailable()

    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"DIMENSIONS": 12}}):
        with connection.schema_editor() as editor:
            operation.database_forwards("cogitator_memory", editor, None, None)
        built = index_definition("cm_emb_hnsw_12")
        with connection.schema_editor() as editor:
            operation.database_backwards("cogitator_memory", editor, None, None)

    # then
    assert built is not None
    assert "((embedding)::vector(12)) vector_cosine_ops" in built
    assert index_definition("cm_emb_hnsw_12") is None
    assert index_definition("cm_emb_dims") is None


def test_the_migrated_database_has_the_btree_on_dimensions() -> None:
    # given: the test database, migrated

    # when
    definition = index_definition("cm_emb_dims")

    # then
    assert definition == f"CREATE INDEX cm_emb_dims ON public.{TABLE} USING btree (dimensions)"


# --- vector_status and dimension mismatches --------------------------------------------


def test_vector_status_reports_the_size_of_the_stored_vectors() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.ensure_index(3, concurrently=False)
    store.add([new("one", [1, 0, 0])])

    # when
    status = store.vector_status()

    # then
    assert status == VectorStatus(available=True, dimensions=3)


def test_vector_status_names_the_sizes_without_their_index_and_the_command_to_run() -> None:
    # given: vectors of 3, 4 and 4,500 dimensions; an index for none of them
    store = PgVectorEmbeddingStore()
    store.add([new("three", [1, 0, 0]), new("four", [1, 0, 0, 0]), new("huge", [1.0] * 4500)])

    # when
    status = store.vector_status()

    # then: above 4,000 dimensions no index is wanted
    assert status == VectorStatus(
        available=True,
        dimensions=None,
        missing_indexes=(3, 4),
        hint="No HNSW index for vectors of 3 and 4 dimensions: their searches read every row "
        "of that size (the same results, slower as the table grows). Build them with: "
        "manage.py vector_indexes --create",
    )


def test_vector_status_stops_naming_a_size_once_its_index_is_built() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([new("three", [1, 0, 0]), new("four", [1, 0, 0, 0])])

    # when
    store.ensure_index(4, concurrently=False)

    # then
    status = store.vector_status()
    assert status.missing_indexes == (3,)
    assert status.hint is not None
    assert status.hint.startswith("No HNSW index for vectors of 3 dimensions:")
    assert status.hint.endswith("Build it with: manage.py vector_indexes --create")


def test_vector_status_names_the_configured_size_before_any_vector_is_stored() -> None:
    # given
    store = PgVectorEmbeddingStore(dimensions=8)

    # when
    status = store.vector_status()

    # then
    assert (status.available, status.dimensions, status.missing_indexes) == (True, 8, (8,))


def test_vector_status_reports_stored_vectors_of_another_size_than_configured() -> None:
    # given
    PgVectorEmbeddingStore().add([new("old", [1, 0, 0, 0])])
    store = PgVectorEmbeddingStore(dimensions=8)

    # when
    status = store.vector_status()

    # then
    assert status == VectorStatus(
        available=False,
        dimensions=8,
        reason="stored embeddings have 4 dimensions; the store is configured for 8",
    )


def test_search_of_a_store_configured_for_another_size_raises_vectors_unavailable() -> None:
    # given
    PgVectorEmbeddingStore().add([new("old", [1, 0, 0, 0])])
    store = PgVectorEmbeddingStore(dimensions=8)

    # when
    with pytest.raises(VectorsUnavailable) as raised:
        store.search([1.0] * 8)

    # then
    assert str(raised.value) == (
        "Vector search is unavailable: stored embeddings have 4 dimensions; "
        "the store is configured for 8"
    )
    assert raised.value.code == "vectors_unavailable"


def test_a_column_created_with_a_fixed_size_keeps_it_and_reports_another_configured_size() -> None:
    # given: a column made as vector(4) before, e.g. by an earlier schema
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN embedding TYPE vector(4)")
    store = PgVectorEmbeddingStore(dimensions=8)

    # when
    status = store.vector_status()

    # then
    assert status == VectorStatus(
        available=False,
        dimensions=8,
        reason="the embedding column holds vector(4); the store is configured for 8 dimensions",
    )
    with pytest.raises(VectorsUnavailable, match=r"column holds vector\(4\)"):
        store.search([1.0] * 8)


# --- rows written without the native column --------------------------------------------


def test_sync_native_column_makes_rows_stored_without_it_searchable() -> None:
    # given: rows written by the exact store carry only the float32 bytes
    ExactEmbeddingStore().add([new("a", [1, 0]), new("b", [0, 1])])
    store = PgVectorEmbeddingStore()
    assert store.search([1, 0]) == []

    # when
    filled = store.sync_native_column(concurrently=False)

    # then
    assert filled == 2
    assert sources(store.search([1, 0], limit=2)) == ["a", "b"]
    assert index_definition("cm_emb_hnsw_2") is not None


# --- scopes ----------------------------------------------------------------------------


def scoped_rows(store: PgVectorEmbeddingStore) -> None:
    store.add(
        [
            new("agent-a", [1, 0], agentId="a"),
            new("agent-b", [1, 0.1], agentId="b"),
            new("shared", [1, 0.2]),
            new("thread-1", [1, 0.3], threadId="t1"),
            new("thread-2", [1, 0.4], threadId="t2"),
            new("user-u", [1, 0.5], userId="u"),
            new("user-v", [1, 0.6], userId="v"),
        ]
    )


def test_an_agent_filter_admits_that_agents_rows_and_rows_of_no_agent() -> None:
    # given
    store = PgVectorEmbeddingStore()
    scoped_rows(store)

    # when
    hits = store.search([1, 0], limit=10, filter=EmbeddingFilter(agent_id="a"))

    # then
    assert "agent-b" not in sources(hits)
    assert sources(hits) == ["agent-a", "shared", "thread-1", "thread-2", "user-u", "user-v"]


def test_a_thread_filter_admits_that_threads_rows_and_rows_of_no_thread() -> None:
    # given
    store = PgVectorEmbeddingStore()
    scoped_rows(store)

    # when
    hits = store.search([1, 0], limit=10, filter=EmbeddingFilter(thread_id="t1"))

    # then
    assert sources(hits) == ["agent-a", "agent-b", "shared", "thread-1", "user-u", "user-v"]


def test_a_user_filter_admits_that_users_rows_and_rows_of_no_user() -> None:
    # given
    store = PgVectorEmbeddingStore()
    scoped_rows(store)

    # when
    hits = store.search([1, 0], limit=10, filter=EmbeddingFilter(user_id="v"))

    # then
    assert sources(hits) == ["agent-a", "agent-b", "shared", "thread-1", "thread-2", "user-v"]


def test_a_metadata_filter_matches_values_of_the_same_type_exactly() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add(
        [
            new("number", [1, 0], priority=1),
            new("text", [1, 0.1], priority="1"),
            new("none", [1, 0.2]),
        ]
    )

    # when
    hits = store.search([1, 0], limit=10, filter=EmbeddingFilter(metadata={"priority": 1}))

    # then
    assert sources(hits) == ["number"]


def test_index_and_source_type_filters_match_exactly() -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add(
        [
            NewEmbedding("message", "m1", [1, 0], metadata={"index": "messages"}),
            NewEmbedding("message", "m2", [1, 0.1]),
            NewEmbedding("item", "i1", [1, 0.2], metadata={"index": "messages"}),
        ]
    )

    # when
    hits = store.search(
        [1, 0], limit=10, filter=EmbeddingFilter(source_type="message", index="messages")
    )

    # then
    assert sources(hits) == ["m1"]
