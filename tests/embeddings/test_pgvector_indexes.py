"""Indexes of the pgvector store: writes build none; ``ensure_index`` builds the partial
HNSW index of a size (concurrently outside a transaction, in it otherwise), rebuilds one a
failed build left invalid, lets racing builders share one; the migration builds the
configured size's; ``vector_status()`` names the sizes still without theirs, whose
searches scan exactly and find the same rows."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from cogitator_memory.embeddings.schema import AddVectorIndexesWhereAvailable
from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.embeddings.types import VectorStatus
from cogitator_memory.exceptions import InvalidInput
from tests.embeddings.pgvector_support import (
    TABLE,
    drop_indexes,
    index_definition,
    index_is_valid,
    new,
    prefer_indexes,
    random_unit,
    search_with_plan,
    sources,
    store_rows,
)

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db]


# --- building ----------------------------------------------------------------------------


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


# --- vector_status ------------------------------------------------------------------------


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
