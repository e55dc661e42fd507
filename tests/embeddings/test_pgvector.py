"""The pgvector store on embedded PostgreSQL: searches and scores, halfvec from 2,001
dimensions and exact scans above 4,000, query plans that use the index of the query's
size, large limits and selective filters, dimension mismatches and scopes."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.embeddings.types import EmbeddingFilter, NewEmbedding, VectorStatus
from cogitator_memory.exceptions import InvalidInput, VectorSearchUnavailable
from tests.embeddings.pgvector_support import (
    TABLE,
    index_definition,
    near,
    new,
    prefer_indexes,
    random_unit,
    search_with_plan,
    sources,
    store_rows,
)

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db]

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


def test_search_of_a_store_configured_for_another_size_raises_vector_search_unavailable() -> None:
    # given
    PgVectorEmbeddingStore().add([new("old", [1, 0, 0, 0])])
    store = PgVectorEmbeddingStore(dimensions=8)

    # when
    with pytest.raises(VectorSearchUnavailable) as raised:
        store.search([1.0] * 8)

    # then
    assert str(raised.value) == (
        "Vector search is unavailable: stored embeddings have 4 dimensions; "
        "the store is configured for 8."
    )
    assert raised.value.code == "vector_search_unavailable"


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
    with pytest.raises(VectorSearchUnavailable, match=r"column holds vector\(4\)"):
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
