"""The contract every embedding store keeps, run on each of them.

- ``exact``: the in-process scan, on SQLite and PostgreSQL;
- ``pgvector``: the native vector column, on PostgreSQL only (deselected on SQLite);
- ``qdrant``: the Qdrant client's embedded mode, on both databases.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    EmbeddingStore,
    SearchHit,
    StoredEmbedding,
    VectorStatus,
)
from cogitator_memory.exceptions import InvalidInput
from tests.embeddings.conftest import MakeEmbedding

pytestmark = pytest.mark.django_db

STORES = [
    pytest.param("exact_store", id="exact"),
    pytest.param("pgvector_store", id="pgvector", marks=pytest.mark.postgres_only),
    pytest.param("qdrant_store", id="qdrant"),
]

X = [1.0, 0.0, 0.0]
Y = [0.0, 1.0, 0.0]
Z = [0.0, 0.0, 1.0]
XY = [1.0, 1.0, 0.0]
MINUS_X = [-1.0, 0.0, 0.0]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> EmbeddingStore:
    found: EmbeddingStore = request.getfixturevalue(request.param)
    if isinstance(found, PgVectorEmbeddingStore):
        # As after the migration of a project configured for 3 dimensions: the size's
        # index is there before the first row.
        found.ensure_index(3, concurrently=False)
    return found


def sources(found: list[SearchHit] | list[StoredEmbedding]) -> list[str]:
    return [(item.embedding if isinstance(item, SearchHit) else item).source_id for item in found]


def visible(store: EmbeddingStore, filter: EmbeddingFilter | None = None) -> set[str]:
    return set(sources(store.search(X, limit=100, filter=filter)))


def everything(store: EmbeddingStore) -> set[str]:
    return visible(store)


# --- add --------------------------------------------------------------------------------


def test_add_returns_what_it_stored(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    embedding = new("m1", X, content="hello", agentId="a1", index="messages")
    # when
    [added] = store.add([embedding])
    # then
    assert added.id.startswith("emb_")
    assert (added.source_type, added.source_id, added.content) == ("message", "m1", "hello")
    assert added.metadata == {"agentId": "a1", "index": "messages"}
    assert added.dimensions == 3
    assert added.created_at is not None


def test_add_keeps_an_id_given_by_the_caller(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    embedding = new("m1", X, id="emb_chosen")
    # when
    store.add([embedding])
    # then
    [hit] = store.search(X)
    assert hit.embedding.id == "emb_chosen"


def test_add_of_nothing_stores_nothing(store: EmbeddingStore) -> None:
    # when
    added = store.add([])
    # then
    assert added == []
    assert everything(store) == set()


def test_adding_a_source_again_replaces_it(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("m1", X, content="old")])
    # when
    store.add([new("m1", Y, content="new")])
    # then
    [hit] = store.search(Y, limit=10)
    assert (hit.embedding.source_id, hit.embedding.content) == ("m1", "new")
    assert len(store.get_by_sources(["m1"])) == 1


def test_adding_the_same_id_again_replaces_it(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("m1", X, id="emb_same", content="old")])
    # when
    store.add([new("m1", Y, id="emb_same", content="new")])
    # then
    [found] = store.get_by_sources(["m1"])
    assert (found.id, found.content) == ("emb_same", "new")


def test_one_source_in_two_indexes_is_two_embeddings(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m1", X, index="messages")])
    # when
    store.add([new("m1", Y, index="summaries")])
    # then
    found = store.get_by_sources(["m1"])
    assert sorted(item.metadata["index"] for item in found) == ["messages", "summaries"]


def test_one_source_id_of_two_source_types_is_two_embeddings(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("s1", X, source_type="message")])
    # when
    store.add([new("s1", Y, source_type="item")])
    # then
    found = store.get_by_sources(["s1"])
    assert sorted(item.source_type for item in found) == ["item", "message"]


# --- search -----------------------------------------------------------------------------


def test_search_ranks_the_most_similar_first(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("far", Y), new("near", X), new("between", XY)])
    # when
    hits = store.search(X)
    # then
    assert sources(hits) == ["near", "between", "far"]
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_search_scores_are_cosines_between_minus_one_and_one(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("same", [2.0, 0.0, 0.0]), new("between", XY), new("opposite", MINUS_X)])
    # when
    hits = store.search([3.0, 0.0, 0.0])
    # then
    scores = {hit.embedding.source_id: hit.score for hit in hits}
    assert scores == pytest.approx({"same": 1.0, "between": math.sqrt(0.5), "opposite": -1.0})
    assert all(-1.0 <= hit.score <= 1.0 for hit in hits)


def test_search_returns_at_most_limit_hits(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("near", X), new("between", XY), new("far", Y)])
    # when
    hits = store.search(X, limit=2)
    # then
    assert sources(hits) == ["near", "between"]


def test_search_leaves_out_hits_below_the_threshold(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("near", X), new("between", XY), new("far", Y)])
    # when
    hits = store.search(X, threshold=0.5)
    # then
    assert sources(hits) == ["near", "between"]


def test_search_keeps_a_hit_scoring_the_threshold_itself(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("near", X), new("far", Y)])
    # when
    hits = store.search(X, threshold=1.0)
    # then
    assert sources(hits) == ["near"]


def test_search_of_an_empty_store_finds_nothing(store: EmbeddingStore) -> None:
    # when
    hits = store.search(X)
    # then
    assert hits == []


def test_search_hits_carry_content_and_metadata(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    [added] = store.add([new("m1", X, content="the text", agentId="a1", tags=["x", "y"])])
    # when
    [hit] = store.search(X)
    # then
    assert hit.embedding.id == added.id
    assert hit.embedding.content == "the text"
    assert hit.embedding.metadata == {"agentId": "a1", "tags": ["x", "y"]}


# --- get_by_sources ---------------------------------------------------------------------


def test_get_by_sources_returns_those_sources_with_their_vectors(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m2", [0.0, 3.0, 4.0]), new("m1", [2.0, 0.0, 0.0]), new("m3", Z)])
    # when
    found = store.get_by_sources(["m1", "m2", "unknown"])
    # then
    assert sources(found) == ["m1", "m2"]
    assert found[0].vector == pytest.approx([2.0, 0.0, 0.0], rel=1e-6)
    assert found[1].vector == pytest.approx([0.0, 3.0, 4.0], rel=1e-6)


def test_get_by_sources_of_no_source_finds_nothing(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m1", X)])
    # when
    found = store.get_by_sources([])
    # then
    assert found == []


def test_get_by_sources_keeps_to_the_filter(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("mine", X, agentId="a1"), new("theirs", X, agentId="a2"), new("shared", X)])
    # when
    found = store.get_by_sources(
        ["mine", "theirs", "shared"], filter=EmbeddingFilter(agent_id="a1")
    )
    # then
    assert sources(found) == ["mine", "shared"]


@pytest.mark.parametrize(
    "filter",
    [
        None,
        EmbeddingFilter(agent_id="a1"),
        EmbeddingFilter(metadata={"index": "messages"}),
        EmbeddingFilter(agent_id="a2", metadata={"index": "messages"}),
    ],
    ids=["no-filter", "agent", "index", "agent-and-index"],
)
def test_sources_present_names_the_sources_get_by_sources_returns(
    store: EmbeddingStore, new: MakeEmbedding, filter: EmbeddingFilter | None
) -> None:
    """The database stores and Qdrant tell which sources have an embedding without reading
    vectors: the same sources ``get_by_sources`` returns, under the same filter."""
    # given
    store.add(
        [
            new("mine", X, agentId="a1", index="messages"),
            new("theirs", Y, agentId="a2", index="messages"),
            new("shared", Z),
            new("other-index", XY, agentId="a2", index="items"),
        ]
    )
    asked = ["mine", "theirs", "shared", "other-index", "unknown"]
    # when
    present = store.sources_present(asked, filter=filter)  # type: ignore[attr-defined]
    # then
    assert present == set(sources(store.get_by_sources(asked, filter=filter)))
    assert store.sources_present([], filter=filter) == set()  # type: ignore[attr-defined]


# --- delete, delete_by_sources ----------------------------------------------------------


def test_delete_removes_those_ids_and_counts_them(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    first, second, _kept = store.add([new("m1", X), new("m2", Y), new("m3", Z)])
    # when
    deleted = store.delete([first.id, second.id, "emb_unknown"])
    # then
    assert deleted == 2
    assert everything(store) == {"m3"}


def test_delete_by_sources_removes_every_embedding_of_those_sources(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add(
        [
            new("m1", X, index="messages"),
            new("m1", Y, index="summaries"),
            new("m2", Y),
            new("m3", Z),
        ]
    )
    # when
    deleted = store.delete_by_sources(["m1", "m2"])
    # then
    assert deleted == 3
    assert everything(store) == {"m3"}


# --- delete_by_filter -------------------------------------------------------------------


def test_delete_by_filter_refuses_a_filter_without_conditions(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m1", X)])
    # when
    with pytest.raises(InvalidInput) as caught:
        store.delete_by_filter(EmbeddingFilter())
    # then
    assert str(caught.value) == "filter: delete_by_filter needs at least one condition."
    assert everything(store) == {"m1"}


@pytest.mark.parametrize(
    ("filter", "left"),
    [
        (EmbeddingFilter(agent_id="a1"), {"agent a2", "thread t1", "user u1", "shared"}),
        (EmbeddingFilter(thread_id="t1"), {"agent a1", "agent a2", "user u1", "shared"}),
        (EmbeddingFilter(user_id="u1"), {"agent a1", "agent a2", "thread t1", "shared"}),
    ],
    ids=["agent", "thread", "user"],
)
def test_delete_by_filter_of_a_scope_spares_the_shared_embeddings(
    store: EmbeddingStore, new: MakeEmbedding, filter: EmbeddingFilter, left: set[str]
) -> None:
    # given
    store.add(
        [
            new("agent a1", X, agentId="a1"),
            new("agent a2", X, agentId="a2"),
            new("thread t1", X, threadId="t1"),
            new("user u1", X, userId="u1"),
            new("shared", X),
        ]
    )
    # when
    deleted = store.delete_by_filter(filter)
    # then
    assert deleted == 1
    assert everything(store) == left


def test_delete_by_filter_deletes_exact_metadata_values_only(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add(
        [
            new("number", X, doc=1),
            new("text", X, doc="1"),
            new("flag", X, doc=True),
            new("none", X),
        ]
    )
    # when
    deleted = store.delete_by_filter(EmbeddingFilter(metadata={"doc": 1}))
    # then
    assert deleted == 1
    assert everything(store) == {"text", "flag", "none"}


def test_delete_by_filter_joins_its_conditions(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add(
        [
            new("both", X, agentId="a1", index="messages"),
            new("agent only", X, agentId="a1", index="docs"),
            new("index only", X, agentId="a2", index="messages"),
        ]
    )
    # when
    deleted = store.delete_by_filter(EmbeddingFilter(agent_id="a1", index="messages"))
    # then
    assert deleted == 1
    assert everything(store) == {"agent only", "index only"}


def test_delete_by_filter_of_a_source_type(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("m1", X, source_type="message"), new("i1", X, source_type="item")])
    # when
    deleted = store.delete_by_filter(EmbeddingFilter(source_type="item"))
    # then
    assert deleted == 1
    assert everything(store) == {"m1"}


# --- scoping ----------------------------------------------------------------------------


def test_an_agents_embeddings_are_hidden_from_other_agents(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("mine", X, agentId="a1"), new("theirs", X, agentId="a2"), new("shared", X)])
    # when
    seen = visible(store, EmbeddingFilter(agent_id="a1"))
    # then
    assert seen == {"mine", "shared"}


def test_embeddings_without_an_agent_are_seen_by_every_agent(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("shared", X), new("theirs", X, agentId="a2")])
    # when
    seen = visible(store, EmbeddingFilter(agent_id="someone"))
    # then
    assert seen == {"shared"}


def test_a_search_without_a_filter_sees_every_scope(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("a1", X, agentId="a1"), new("a2", X, agentId="a2"), new("shared", X)])
    # when
    seen = visible(store)
    # then
    assert seen == {"a1", "a2", "shared"}


def test_a_threads_embeddings_are_hidden_from_other_threads(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("this", X, threadId="t1"), new("other", X, threadId="t2"), new("none", X)])
    # when
    seen = visible(store, EmbeddingFilter(thread_id="t1"))
    # then
    assert seen == {"this", "none"}


def test_a_users_embeddings_are_hidden_from_other_users(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("this", X, userId="u1"), new("other", X, userId="u2"), new("none", X)])
    # when
    seen = visible(store, EmbeddingFilter(user_id="u1"))
    # then
    assert seen == {"this", "none"}


def test_agent_and_thread_scopes_apply_together(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add(
        [
            new("a1 t1", X, agentId="a1", threadId="t1"),
            new("a1 t2", X, agentId="a1", threadId="t2"),
            new("a2 t1", X, agentId="a2", threadId="t1"),
            new("a1 any thread", X, agentId="a1"),
            new("shared", X),
        ]
    )
    # when
    seen = visible(store, EmbeddingFilter(agent_id="a1", thread_id="t1"))
    # then
    assert seen == {"a1 t1", "a1 any thread", "shared"}


def test_a_numeric_agent_id_is_scoped_as_its_text(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("numbered", X, agentId=7), new("other", X, agentId=8)])
    # when
    seen = visible(store, EmbeddingFilter(agent_id="7"))
    # then
    assert seen == {"numbered"}


# --- metadata, index and source type filters ---------------------------------------------


@pytest.mark.parametrize(
    ("value", "matches"),
    [(1, {"number"}), ("1", {"text"}), (True, {"true"}), (False, {"false"}), (None, {"null"})],
    ids=["number", "text", "true", "false", "null"],
)
def test_metadata_filters_compare_type_and_value(
    store: EmbeddingStore, new: MakeEmbedding, value: Any, matches: set[str]
) -> None:
    # given
    store.add(
        [
            new("number", X, n=1),
            new("text", X, n="1"),
            new("true", X, n=True),
            new("false", X, n=False),
            new("null", X, n=None),
            new("missing", X),
        ]
    )
    # when
    seen = visible(store, EmbeddingFilter(metadata={"n": value}))
    # then
    assert seen == matches


def test_a_whole_float_matches_the_equal_integer(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("float", X, n=2.0), new("other", X, n=2.5)])
    # when
    seen = visible(store, EmbeddingFilter(metadata={"n": 2}))
    # then
    assert seen == {"float"}


def test_metadata_filters_of_several_keys_all_hold(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add(
        [
            new("both", X, kind="doc", lang="pt"),
            new("kind only", X, kind="doc", lang="en"),
            new("lang only", X, kind="note", lang="pt"),
        ]
    )
    # when
    seen = visible(store, EmbeddingFilter(metadata={"kind": "doc", "lang": "pt"}))
    # then
    assert seen == {"both"}


def test_a_metadata_filter_refuses_an_object_value(store: EmbeddingStore) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        store.search(X, filter=EmbeddingFilter(metadata={"n": {"a": 1}}))
    # then
    assert (
        str(caught.value) == "filter: Filter value of 'n' must be a text, number, boolean or null."
    )


def test_a_metadata_filter_refuses_a_key_outside_the_allowed_characters(
    store: EmbeddingStore,
) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        store.search(X, filter=EmbeddingFilter(metadata={"a.b": 1}))
    # then
    assert str(caught.value) == "filter: Filter key 'a.b': use letters, digits and _ : @ - only."


def test_the_index_filter_keeps_to_that_index(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # given
    store.add([new("m1", X, index="messages"), new("d1", X, index="docs"), new("plain", X)])
    # when
    seen = visible(store, EmbeddingFilter(index="messages"))
    # then
    assert seen == {"m1"}


def test_the_source_type_filter_keeps_to_that_type(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m1", X, source_type="message"), new("i1", X, source_type="item")])
    # when
    seen = visible(store, EmbeddingFilter(source_type="item"))
    # then
    assert seen == {"i1"}


# --- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        ([], "vector: A vector is a non-empty list of numbers."),
        ([1.0, math.nan, 0.0], "vector: Vector values must be finite numbers."),
        ([1.0, math.inf, 0.0], "vector: Vector values must be finite numbers."),
        ([0.0, 0.0, 0.0], "vector: A zero vector has no direction to compare."),
        ([1.0, 0.0, 0.0, 0.0], "vector: Expected 3 dimensions, got 4."),
    ],
    ids=["empty", "nan", "infinity", "zero", "wrong-dimension"],
)
def test_add_refuses_a_bad_vector(
    store: EmbeddingStore, new: MakeEmbedding, vector: list[float], message: str
) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        store.add([new("m1", vector)])
    # then
    assert str(caught.value) == message


def test_a_batch_with_one_bad_vector_stores_nothing(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # when
    with pytest.raises(InvalidInput):
        store.add([new("good", X), new("bad", [1.0, math.nan, 0.0])])
    # then
    assert store.get_by_sources(["good", "bad"]) == []


def test_add_refuses_metadata_that_is_not_json(store: EmbeddingStore, new: MakeEmbedding) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        store.add([new("m1", X, score=math.nan)])
    # then
    assert str(caught.value) == "metadata: Numbers must be finite (no NaN or infinity)."


def test_add_refuses_an_embedding_without_a_source(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        store.add([new("", X)])
    # then
    assert str(caught.value) == "source_id: source_type and source_id are required."


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        ([], "vector: A vector is a non-empty list of numbers."),
        ([math.nan, 0.0, 0.0], "vector: Vector values must be finite numbers."),
    ],
    ids=["empty", "nan"],
)
def test_search_refuses_a_bad_vector(
    store: EmbeddingStore, new: MakeEmbedding, vector: list[float], message: str
) -> None:
    # given
    store.add([new("m1", X)])
    # when
    with pytest.raises(InvalidInput) as caught:
        store.search(vector)
    # then
    assert str(caught.value) == message


@pytest.mark.parametrize("limit", [0, -1, True])
def test_search_refuses_a_limit_below_one(store: EmbeddingStore, limit: int) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        store.search(X, limit=limit)
    # then
    assert str(caught.value) == "limit: limit must be a whole number of 1 or more."


# --- copies -----------------------------------------------------------------------------


def test_changing_a_search_hit_changes_nothing_stored(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m1", X, tags=["a"], kind="doc")])
    [hit] = store.search(X)
    # when
    hit.embedding.metadata["kind"] = "changed"
    hit.embedding.metadata["tags"].append("b")
    # then
    [again] = store.search(X)
    assert again.embedding.metadata == {"tags": ["a"], "kind": "doc"}


def test_changing_what_add_returned_changes_nothing_stored(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    [added] = store.add([new("m1", X, tags=["a"])])
    # when
    added.metadata["tags"].append("b")
    # then
    [found] = store.get_by_sources(["m1"])
    assert found.metadata == {"tags": ["a"]}


def test_changing_the_metadata_given_to_add_changes_nothing_stored(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    tags = ["a"]
    embedding = new("m1", X, tags=tags)
    store.add([embedding])
    # when
    tags.append("b")
    # then
    [found] = store.get_by_sources(["m1"])
    assert found.metadata == {"tags": ["a"]}


def test_changing_a_returned_vector_changes_nothing_stored(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m1", [2.0, 0.0, 0.0])])
    [found] = store.get_by_sources(["m1"])
    assert found.vector is not None
    # when
    found.vector[0] = -5.0
    # then
    [again] = store.get_by_sources(["m1"])
    assert again.vector == pytest.approx([2.0, 0.0, 0.0])


# --- vector_status ----------------------------------------------------------------------


def test_vector_status_reports_the_configured_dimensions(
    store: EmbeddingStore, new: MakeEmbedding
) -> None:
    # given
    store.add([new("m1", X)])
    # when
    status = store.vector_status()
    # then
    assert status == VectorStatus(available=True, dimensions=3, reason=None)
