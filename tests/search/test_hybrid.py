"""Semantic and hybrid search: channels, fusion, fallbacks and scope, with the concept
embedder (``tests/search/embedder.py``) at the service seam."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    SearchHit,
    VectorStatus,
)
from cogitator_memory.exceptions import (
    EmbeddingServiceError,
    EmbeddingsNotConfigured,
    InvalidInput,
    KeywordSearchUnavailable,
    VectorSearchUnavailable,
)
from cogitator_memory.grants import Grants
from cogitator_memory.search.bm25 import keyword_search
from cogitator_memory.search.fusion import reciprocal_rank_fusion
from cogitator_memory.search.hybrid import hybrid_search, semantic_search
from tests.search.conftest import IndexText
from tests.search.support import ConceptEmbeddings, concept_vector

pytestmark = pytest.mark.django_db

CODE_AND_MEANING = "car repair ZX-4471"


def sources(hits: Sequence[SearchHit]) -> list[str]:
    return [hit.embedding.source_id for hit in hits]


def cosine(first: str, second: str) -> float:
    a, b = concept_vector(first), concept_vector(second)
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return float(dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5))


@pytest.fixture
def garage(index_text: IndexText) -> None:
    """A text about a car in other words, a text of an order code, and others."""
    index_text("breakdown", "My automobile broke down on the highway.")
    index_text("order", "Order ZX-4471 shipped this morning.")
    index_text("dinner", "We had pasta for dinner.")
    index_text("puppy", "The puppy chewed my shoe.")
    index_text("trip", "Our holiday trip to Spain was lovely.")


# --- the channels ----------------------------------------------------------------------


def test_keyword_search_alone_misses_the_text_that_says_it_in_other_words(garage: None):
    # when
    hits = keyword_search(CODE_AND_MEANING, limit=5)
    # then
    assert sources(hits) == ["order"]


def test_vector_search_alone_misses_the_order_code(garage: None):
    # when
    hits = semantic_search(CODE_AND_MEANING, limit=1, service=ConceptEmbeddings())
    # then
    assert sources(hits) == ["breakdown"]


def test_hybrid_search_finds_both_by_meaning_and_by_the_code(garage: None):
    # when
    found = hybrid_search(CODE_AND_MEANING, limit=2, service=ConceptEmbeddings())
    # then
    assert sorted(sources(found.hits)) == ["breakdown", "order"]
    assert found.channels == ("keyword", "vector")
    assert found.errors == {}


def test_hybrid_scores_are_the_reciprocal_rank_fusion_of_both_channels(garage: None):
    # given
    service = ConceptEmbeddings()
    keyword = keyword_search(CODE_AND_MEANING, limit=30)
    vector = semantic_search(CODE_AND_MEANING, limit=30, service=service)
    expected = reciprocal_rank_fusion(
        {
            "keyword": [hit.embedding.id for hit in keyword],
            "vector": [hit.embedding.id for hit in vector],
        }
    )
    # when
    found = hybrid_search(CODE_AND_MEANING, limit=5, service=service)
    # then
    assert [(hit.embedding.id, hit.score) for hit in found.hits] == [
        (item.id, item.score) for item in expected[:5]
    ]


def test_a_vector_weight_of_zero_puts_the_keyword_ranking_first(garage: None):
    # when
    found = hybrid_search(
        CODE_AND_MEANING, limit=5, service=ConceptEmbeddings(), weights={"vector": 0}
    )
    # then: the keyword hit first; the others, which only vectors found, after it
    assert sources(found.hits)[0] == "order"
    assert [hit.score for hit in found.hits[1:]] == [0.0] * 4


def test_semantic_search_scores_are_cosine_similarities(index_text: IndexText):
    # given
    index_text("same", "puppy puppy")
    index_text("half", "puppy dinner")
    # when
    hits = semantic_search("dog", limit=2, service=ConceptEmbeddings())
    # then
    assert sources(hits) == ["same", "half"]
    assert [hit.score for hit in hits] == pytest.approx(
        [cosine("dog", "puppy puppy"), cosine("dog", "puppy dinner")], rel=1e-5
    )


def test_the_configured_service_embeds_the_query(garage: None, with_concepts: None):
    # when
    found = hybrid_search(CODE_AND_MEANING, limit=2)
    # then
    assert found.channels == ("keyword", "vector")
    assert sorted(sources(found.hits)) == ["breakdown", "order"]


# --- without vectors -------------------------------------------------------------------


def test_hybrid_search_without_a_service_is_keyword_search(garage: None):
    # when
    found = hybrid_search(CODE_AND_MEANING, limit=5)
    # then
    assert found.channels == ("keyword",)
    assert sources(found.hits) == ["order"]
    assert found.errors["vector"].startswith("No embedding service is configured")


def test_semantic_search_without_a_service_says_so(garage: None):
    # when / then
    with pytest.raises(EmbeddingsNotConfigured, match=r"^No embedding service is configured"):
        semantic_search(CODE_AND_MEANING)


def test_a_failing_service_leaves_hybrid_search_to_keywords(garage: None):
    # given
    class Failing(ConceptEmbeddings):
        provider = "failing"

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            raise EmbeddingServiceError(self.provider, "service unavailable", status=503)

    # when
    found = hybrid_search(CODE_AND_MEANING, limit=5, service=Failing())
    # then
    assert found.channels == ("keyword",)
    assert sources(found.hits) == ["order"]
    assert found.errors == {"vector": "failing embeddings failed (HTTP 503): service unavailable"}


def test_a_service_answering_no_vector_is_a_service_error(garage: None):
    # given
    class Mute(ConceptEmbeddings):
        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return []

    # when / then
    with pytest.raises(
        EmbeddingServiceError,
        match=r"^concepts embeddings failed: expected one vector for one text, got 0$",
    ):
        semantic_search(CODE_AND_MEANING, service=Mute())


def test_a_query_vector_of_another_size_than_the_stores_is_refused(garage: None):
    # when / then
    with pytest.raises(
        VectorSearchUnavailable,
        match=r"^Vector search is unavailable: the query's vector has 32 dimensions and "
        r"the store's have 64\.$",
    ):
        semantic_search(CODE_AND_MEANING, service=ConceptEmbeddings(dimensions=32))


def test_a_store_that_cannot_search_vectors_leaves_hybrid_search_to_keywords(garage: None):
    # given a store configured for another size than the one stored
    store = ExactEmbeddingStore(dimensions=32)
    # when
    found = hybrid_search(CODE_AND_MEANING, limit=5, store=store, service=ConceptEmbeddings())
    # then
    assert found.channels == ("keyword",)
    assert found.errors == {
        "vector": "Vector search is unavailable: stored embeddings have 64 dimensions; the "
        "store is configured for 32."
    }


# --- stores without keyword search -----------------------------------------------------


class VectorsOnlyStore:
    """A store outside the database that searches vectors only."""

    def __init__(self) -> None:
        self.exact = ExactEmbeddingStore()

    def vector_status(self) -> VectorStatus:
        return self.exact.vector_status()

    def search(self, vector: Sequence[float], **options: Any) -> list[SearchHit]:
        return self.exact.search(vector, **options)


def test_hybrid_search_on_a_store_without_keyword_search_is_vector_search(garage: None):
    # when
    found = hybrid_search(
        CODE_AND_MEANING,
        limit=2,
        store=VectorsOnlyStore(),  # type: ignore[arg-type]
        service=ConceptEmbeddings(),
    )
    # then
    assert found.channels == ("vector",)
    assert found.errors == {"keyword": "VectorsOnlyStore has no keyword search."}
    assert sources(found.hits)[0] == "breakdown"


def test_hybrid_search_with_neither_channel_raises_the_keyword_error(garage: None):
    # when / then
    with pytest.raises(KeywordSearchUnavailable, match=r"^VectorsOnlyStore has no keyword"):
        hybrid_search(CODE_AND_MEANING, store=VectorsOnlyStore())  # type: ignore[arg-type]


# --- bad input -------------------------------------------------------------------------


def test_weights_of_unknown_channels_are_refused():
    # when / then
    with pytest.raises(
        InvalidInput,
        match=r"^weights: Unknown channels \['graph'\]; the channels are "
        r"\['keyword', 'vector'\]\.$",
    ):
        hybrid_search("parcel", weights={"graph": 1.0})


@pytest.mark.parametrize("search", [semantic_search, hybrid_search])
def test_an_empty_query_is_refused_before_anything_is_embedded(search: Any):
    # given
    service = ConceptEmbeddings()
    # when / then
    with pytest.raises(InvalidInput, match=r"^query: A search needs a query text\.$"):
        search(" ", service=service)
    assert service.calls == []


@pytest.mark.parametrize("search", [semantic_search, hybrid_search])
def test_a_limit_below_one_is_refused(search: Any):
    # when / then
    with pytest.raises(InvalidInput, match=r"^limit: limit must be a whole number of 1 or more"):
        search("parcel", limit=0, service=ConceptEmbeddings())


# --- scope, in every mode --------------------------------------------------------------


def search_sources(mode: str, query: str, **options: Any) -> list[str]:
    service = ConceptEmbeddings()
    if mode == "keyword":
        hits = keyword_search(query, limit=50, **options)
    elif mode == "vector":
        hits = semantic_search(query, limit=50, service=service, **options)
    else:
        hits = hybrid_search(query, limit=50, service=service, **options).hits
    return sorted(sources(hits))


MODES = ["keyword", "vector", "hybrid"]


@pytest.fixture
def owned_rows(index_text: IndexText) -> None:
    text = "the puppy chewed the parcel"
    index_text("a", text, agent="agent-a")
    index_text("a-u1", text, agent="agent-a", user="u1")
    index_text("a-u2", text, agent="agent-a", user="u2")
    index_text("b", text, agent="agent-b")
    index_text("shared", text)
    index_text("shared-t9", text, thread="t9")


@pytest.mark.parametrize("mode", MODES)
def test_a_scope_sees_only_its_agents_rows_in_every_mode(owned_rows: None, mode: str):
    # when
    found = search_sources(
        mode, "puppy parcel", grants=Grants.for_agents(["agent-b"]), include_shared=False
    )
    # then
    assert found == ["b"]


@pytest.mark.parametrize("mode", MODES)
def test_a_grant_naming_users_sees_only_their_rows_in_every_mode(owned_rows: None, mode: str):
    # given
    grants = Grants.for_agents(["agent-a", "agent-c"], {"agent-a": ["u2"]})
    # when
    found = search_sources(mode, "puppy parcel", grants=grants, include_shared=False)
    # then
    assert found == ["a-u2"]


@pytest.mark.parametrize("mode", MODES)
def test_shared_rows_are_seen_only_when_included_in_every_mode(owned_rows: None, mode: str):
    # when
    found = search_sources(mode, "puppy parcel", grants=Grants.for_agents(["agent-b"]))
    # then: a row of no agent naming a thread is not shared
    assert found == ["b", "shared"]


@pytest.mark.parametrize("mode", MODES)
def test_filters_narrow_within_the_scope_in_every_mode(owned_rows: None, mode: str):
    # when
    found = search_sources(
        mode,
        "puppy parcel",
        grants=Grants.for_agents(["agent-a"]),
        filter=EmbeddingFilter(user_id="u1"),
        include_shared=False,
    )
    # then: u1's row and agent-a's row of no user
    assert found == ["a", "a-u1"]


class CountingStore(ExactEmbeddingStore):
    def __init__(self) -> None:
        super().__init__()
        self.limits: list[int] = []

    def search(self, vector: Sequence[float], **options: Any) -> list[SearchHit]:
        self.limits.append(options["limit"])
        return super().search(vector, **options)


def test_vector_search_asks_for_more_until_enough_hits_are_visible(index_text: IndexText):
    # given agent-b's rows nearer to the query than agent-a's
    for n in range(6):
        index_text(f"b-{n}", "puppy puppy", agent="agent-b")
    index_text("a-near", "puppy and a meal", agent="agent-a")
    index_text("a-far", "a puppy, a trip, a car and a meal", agent="agent-a")
    store = CountingStore()
    # when
    hits = semantic_search(
        "dog",
        limit=2,
        store=store,
        service=ConceptEmbeddings(),
        grants=Grants.for_agents(["agent-a", "agent-c"]),
    )
    # then
    assert sources(hits) == ["a-near", "a-far"]
    assert store.limits == [2, 8]


def test_a_single_granted_agent_is_searched_with_the_store_filter(index_text: IndexText):
    # given
    for n in range(6):
        index_text(f"b-{n}", "puppy puppy", agent="agent-b")
    index_text("a-near", "puppy and a meal", agent="agent-a")
    store = CountingStore()
    # when
    hits = semantic_search(
        "dog",
        limit=1,
        store=store,
        service=ConceptEmbeddings(),
        grants=Grants.for_agents(["agent-a"]),
    )
    # then: the store left agent-b's rows out itself; one request was enough
    assert sources(hits) == ["a-near"]
    assert store.limits == [1]


@pytest.mark.postgres_only
def test_on_pgvector_every_mode_finds_what_it_finds_on_the_exact_store(index_text: IndexText):
    # given the same rows, written through each store in turn
    from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore

    texts = {
        "breakdown": "My automobile broke down on the highway.",
        "order": "Order ZX-4471 shipped this morning.",
        "dinner": "We had pasta for dinner.",
    }
    answers = {}
    for name, store in (("exact", ExactEmbeddingStore()), ("pgvector", PgVectorEmbeddingStore())):
        for source_id, text in texts.items():
            index_text(source_id, text, store=store)
        service = ConceptEmbeddings()
        # when
        answers[name] = (
            [(h.embedding.source_id, h.score) for h in keyword_search("car order", store=store)],
            sources(semantic_search(CODE_AND_MEANING, limit=1, store=store, service=service)),
            sources(hybrid_search(CODE_AND_MEANING, limit=2, store=store, service=service).hits),
        )
    # then
    assert answers["pgvector"] == answers["exact"]
    assert answers["exact"][1:] == (["breakdown"], ["order", "breakdown"])
