"""Keyword search: BM25 ranking, candidates, statistics, filters and scope.

Every test runs on SQLite and on PostgreSQL with the same expectations: the ranking must
not depend on the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import bm25s
import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import EmbeddingFilter, NewEmbedding, SearchHit
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.grants import Grants
from cogitator_memory.keywords.tokenizer import query_terms, tokenize
from cogitator_memory.search.bm25 import KeywordSearchUnavailable, keyword_search
from cogitator_memory.search.bm25_formula import (
    K1,
    B,
    CollectionStats,
    Document,
    bm25_scores,
    saturation,
    term_scores,
)
from tests.search.conftest import IndexText

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def sources(hits: Sequence[SearchHit]) -> list[str]:
    return [hit.embedding.source_id for hit in hits]


def bm25_over_every_row(query: str, texts: Mapping[str, str]) -> dict[str, float]:
    """What bm25s scores when it indexes every row: the reference keyword search meets."""
    ids = list(texts)
    retriever = bm25s.BM25(method="lucene")
    retriever.index([tokenize(texts[i]) for i in ids], show_progress=False)
    scores = retriever.get_scores(query_terms(query))
    return {ids[n]: float(score) for n, score in enumerate(scores) if score > 0}


# Words of six letters, each followed by one space or stop: every text has the same
# characters per token, so the collection's average length is known exactly.
COLLECTION = {
    "harbor": "parcel stored inside harbor monday.",
    "twice": "parcel resent parcel resent friday.",
    "long": "winter crates stayed inside harbor behind closed fences around parcel.",
    "clock": "clocks chimed across market square.",
    "river": "rivers filled meadow during spring.",
    "harbor-only": "harbor opened slowly.",
}


# --- ranking ---------------------------------------------------------------------------


def test_the_document_with_the_rarer_matching_word_ranks_first(index_text: IndexText):
    # given "parcel" in five documents and "zebra" in one, each once, lengths alike
    for n in range(4):
        index_text(f"parcel-{n}", f"The parcel number {n} left the depot today.")
    index_text("common", "Your parcel is waiting at the front desk now.")
    index_text("rare", "Your zebra is waiting at the front desk now.")
    # when
    hits = keyword_search("parcel zebra", limit=3)
    # then
    assert sources(hits)[0] == "rare"
    assert hits[0].score > hits[1].score


def test_scores_are_bm25_over_every_row_the_search_could_reach(index_text: IndexText):
    # given rows holding the words and rows holding none of them
    for source_id, text in COLLECTION.items():
        index_text(source_id, text)
    # when
    hits = keyword_search("parcel harbor", limit=10)
    # then: the scores of BM25 over the whole collection, not over the candidates alone
    expected = bm25_over_every_row("parcel harbor", COLLECTION)
    assert {hit.embedding.source_id: hit.score for hit in hits} == pytest.approx(expected, rel=1e-5)
    assert [hit.score for hit in hits] == sorted(expected.values(), reverse=True)


def test_stopping_at_the_candidate_limit_keeps_the_collections_word_counts(
    index_text: IndexText,
):
    # given three rows with "parcel", the newest last
    for n, (source_id, text) in enumerate(COLLECTION.items()):
        index_text(source_id, text, created_at=T0 + timedelta(minutes=n))
    # when only one candidate may be ranked
    (hit,) = keyword_search("parcel", limit=10, candidates=1)
    # then the row saying it most often, scored as if every row had been read
    assert hit.embedding.source_id == "twice"
    assert hit.score == pytest.approx(bm25_over_every_row("parcel", COLLECTION)["twice"], rel=1e-5)


def test_past_the_candidate_limit_the_strongest_then_newest_rows_of_a_word_are_ranked(
    index_text: IndexText,
):
    # given four rows with "parcel"; the oldest says it most often
    index_text("oldest", "parcel parcel parcel parcel", created_at=T0)
    for n in range(1, 4):
        index_text(f"newer-{n}", f"a parcel came on day {n}", created_at=T0 + timedelta(days=n))
    # when
    hits = keyword_search("parcel", limit=10, candidates=3)
    # then the row saying it most often, and the newest of the others
    assert sorted(sources(hits)) == ["newer-2", "newer-3", "oldest"]


def test_the_rarest_words_choose_the_candidates_and_the_ranking_stays_exact(
    index_text: IndexText,
):
    # given "zebras" in one row, "parcel" in that row and ten others, newer ones (words of
    # six letters, as in COLLECTION)
    texts = {"zebras": "zebras parcel herded."}
    texts |= {f"parcel-{n}": "parcel landed safely." for n in range(10)}
    for n, (source_id, text) in enumerate(texts.items()):
        index_text(source_id, text, created_at=T0 + timedelta(minutes=n))
    # when two candidates may be ranked: "parcel", in eleven rows, cannot choose them
    (hit,) = keyword_search("parcel zebras", limit=1, candidates=2)
    # then the row of the rare word, scored as BM25 over every row scores it
    assert hit.embedding.source_id == "zebras"
    assert hit.score == pytest.approx(
        bm25_over_every_row("parcel zebras", texts)["zebras"], rel=1e-5
    )


def test_rows_of_the_common_words_fill_the_candidates_when_they_could_rank(
    index_text: IndexText,
):
    # given "zebra" in one row, "parcel" in three others
    index_text("zebra", "a zebra", created_at=T0)
    for n in range(3):
        index_text(f"parcel-{n}", "a parcel", created_at=T0 + timedelta(days=n))
    # when three hits are asked of two candidates
    hits = keyword_search("parcel zebra", limit=3, candidates=2)
    # then the rare word's row, and the newest row of the common word
    assert sources(hits) == ["zebra", "parcel-2"]


def test_equal_scores_are_ordered_by_id(index_text: IndexText):
    # given three rows of the same text
    ids = [index_text(f"copy-{n}", "the parcel left the depot").id for n in range(3)]
    # when
    hits = keyword_search("parcel", limit=10)
    # then
    assert [hit.embedding.id for hit in hits] == sorted(ids)
    assert len({hit.score for hit in hits}) == 1


def test_the_limit_keeps_the_best_hits(index_text: IndexText):
    # given
    for source_id, text in COLLECTION.items():
        index_text(source_id, text)
    # when
    hits = keyword_search("parcel harbor", limit=2)
    # then
    expected = bm25_over_every_row("parcel harbor", COLLECTION)
    assert sources(hits) == sorted(expected, key=lambda s: -expected[s])[:2]


def scores_of(hits: Sequence[SearchHit]) -> dict[str, float]:
    return {hit.embedding.source_id: hit.score for hit in hits}


@pytest.mark.parametrize("query", ["parcel harbor", "parcel", "harbor resent inside"])
def test_the_index_and_the_scan_give_every_row_the_same_score_as_bm25s(
    index_text: IndexText, query: str
):
    # given the collection, every row tagged so that a filter on metadata admits them all
    for source_id, text in COLLECTION.items():
        index_text(source_id, text, tag="all")
    # when: without a filter on metadata the keyword index ranks; with one, the scan
    with CaptureQueriesContext(connection) as by_index:
        indexed = keyword_search(query, limit=10)
    with CaptureQueriesContext(connection) as by_scan:
        scanned = keyword_search(query, limit=10, filter=EmbeddingFilter(metadata={"tag": "all"}))
    # then each path ran (postings read by the first only), with one arithmetic
    assert any("keywordposting" in q["sql"] for q in by_index.captured_queries)
    assert not any("keywordposting" in q["sql"] for q in by_scan.captured_queries)
    expected = bm25_over_every_row(query, COLLECTION)
    assert sources(indexed) == sources(scanned)
    assert scores_of(indexed) == pytest.approx(scores_of(scanned), rel=1e-6)
    assert scores_of(indexed) == pytest.approx(expected, rel=1e-6)
    assert scores_of(scanned) == pytest.approx(expected, rel=1e-6)


def test_one_formula_scores_the_index_and_the_documents_in_memory():
    # given a term held by 3 of 10 documents averaging 4 tokens
    stats = CollectionStats(documents=10, average_length=4.0, frequencies={"parcel": 3})
    counts, lengths = np.array([0.0, 1.0, 2.0]), np.array([4.0, 4.0, 8.0])
    # when
    by_term = term_scores(stats.idf("parcel"), counts, lengths, stats.average_length)
    by_document = bm25_scores(
        ["parcel"],
        [Document(4, {}), Document(4, {"parcel": 1}), Document(8, {"parcel": 2})],
        stats,
    )
    # then: Lucene's idf, the saturation with length normalization, in float32
    weight = np.log(1 + (10 - 3 + 0.5) / (3 + 0.5))
    assert stats.idf("parcel") == pytest.approx(weight, rel=1e-7)
    assert saturation(2, 8, 4.0) == pytest.approx(2 / (2 + K1 * (1 - B + B * 8 / 4)))
    assert by_term.dtype == by_document.dtype == np.float32
    assert by_term.tolist() == by_document.tolist()
    assert by_term.tolist() == pytest.approx(
        [0.0, weight * saturation(1, 4, 4.0), weight * saturation(2, 8, 4.0)], rel=1e-6
    )


def test_collection_statistics_replace_those_of_the_indexed_documents():
    # given two documents of a collection of 100 rows, where "parcel" is in 50 rows
    terms = ["parcel", "zebra"]
    documents = [Document.of(["parcel", "depot"], terms), Document.of(["zebra", "depot"], terms)]
    stats = CollectionStats(documents=100, average_length=2.0, frequencies={"parcel": 50})
    # when
    scores = bm25_scores(terms, documents, stats)
    # then: "parcel" weighs log(1 + 50.5 / 50.5); "zebra", counted among the indexed
    # documents only, log(1 + 99.5 / 1.5)
    tf = 1 / (1.5 + 1)
    assert scores.tolist() == pytest.approx(
        [np.log(1 + 50.5 / 50.5) * tf, np.log(1 + 99.5 / 1.5) * tf], rel=1e-6
    )


def test_with_their_own_statistics_scores_equal_those_of_bm25s():
    # given documents whose collection is themselves
    documents = [tokenize(text) for text in COLLECTION.values()]
    terms = ["parcel", "harbor", "resent"]
    stats = CollectionStats(
        documents=len(documents),
        average_length=sum(map(len, documents)) / len(documents),
        frequencies={term: sum(term in d for d in documents) for term in terms},
    )
    reference = bm25s.BM25(method="lucene")
    reference.index(documents, show_progress=False)
    # when
    scores = bm25_scores(terms, [Document.of(d, terms) for d in documents], stats)
    # then: the statistics come from elsewhere, the arithmetic is bm25s's
    np.testing.assert_allclose(scores, reference.get_scores(terms), rtol=1e-6)


# --- words -----------------------------------------------------------------------------


def test_a_document_is_found_by_an_inflected_query_word(index_text: IndexText):
    # given
    index_text("hike", "We hiked up the mountain last summer.")
    index_text("study", "She studies pottery on Sundays.")
    index_text("other", "The parcel left the depot.")
    # when
    hiking = keyword_search("Who goes hiking?", limit=10)
    studying = keyword_search("what does she study", limit=10)
    # then
    assert sources(hiking) == ["hike"]
    assert sources(studying) == ["study"]


def test_a_document_holding_only_stopwords_of_the_query_is_not_found(index_text: IndexText):
    # given
    index_text("parcel", "The parcel is at the harbor.")
    index_text("stops", "It is what it is, and that is all.")
    # when
    hits = keyword_search("where is the parcel", limit=10)
    # then
    assert sources(hits) == ["parcel"]


def test_words_match_in_any_case_beyond_ascii_letters_too(index_text: IndexText):
    # given
    index_text("upper", "ÄRGER MIT DEM PAKET")
    index_text("title", "Ärger mit dem Paket")
    index_text("lower", "ärger mit dem paket")
    index_text("other", "Freude mit dem Brief")
    # when
    by_umlaut = keyword_search("ärger", limit=10)
    by_ascii = keyword_search("PAKET", limit=10)
    # then
    assert sorted(sources(by_umlaut)) == ["lower", "title", "upper"]
    assert sorted(sources(by_ascii)) == ["lower", "title", "upper"]


def test_a_word_inside_a_longer_word_does_not_match(index_text: IndexText):
    # given
    index_text("category", "Pick a category of goods.")
    index_text("cat", "The cat sat on the parcel.")
    # when
    hits = keyword_search("cat", limit=10)
    # then
    assert sources(hits) == ["cat"]


def test_stopwords_of_the_query_change_nothing(index_text: IndexText):
    # given
    for source_id, text in COLLECTION.items():
        index_text(source_id, text)
    # when
    with_stopwords = keyword_search("the parcel is in the harbor", limit=10)
    without = keyword_search("parcel harbor", limit=10)
    # then
    assert [(h.embedding.id, h.score) for h in with_stopwords] == [
        (h.embedding.id, h.score) for h in without
    ]


def test_a_query_of_stopwords_only_still_searches_them(index_text: IndexText):
    # given
    index_text("hamlet", "To be, or not to be, that is the question.")
    index_text("other", "The parcel left the depot.")
    # when
    hits = keyword_search("to be or not to be", limit=10)
    # then
    assert sources(hits) == ["hamlet"]


def test_a_query_without_words_finds_nothing(index_text: IndexText):
    # given
    index_text("punctuation", "?! ... !?")
    # when
    hits = keyword_search("?!", limit=10)
    # then
    assert hits == []


def test_hits_carry_the_embedding_without_its_vector(index_text: IndexText):
    # given
    written = index_text("doc", "The parcel left the depot.", agent="agent-a", topic="parcels")
    # when
    (hit,) = keyword_search("depot", limit=1)
    # then
    assert hit.embedding.id == written.id
    assert hit.embedding.content == "The parcel left the depot."
    assert hit.embedding.metadata == {"agentId": "agent-a", "topic": "parcels"}
    assert hit.embedding.vector is None


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   \n"])
def test_an_empty_query_is_refused(query: str):
    # when / then
    with pytest.raises(InvalidInput, match=r"^query: A search needs a query text\.$"):
        keyword_search(query)


@pytest.mark.parametrize("limit", [0, -1, 2.5, True])
def test_a_limit_that_is_not_a_positive_whole_number_is_refused(limit: object):
    # when / then
    with pytest.raises(InvalidInput, match=r"^limit: limit must be a whole number of 1 or more\."):
        keyword_search("parcel", limit=limit)  # type: ignore[arg-type]


def test_a_candidate_limit_below_one_is_refused():
    # when / then
    with pytest.raises(InvalidInput, match=r"^candidates: candidates must be a whole number"):
        keyword_search("parcel", candidates=0)


# --- filters and scope -----------------------------------------------------------------


@pytest.fixture
def scoped_rows(index_text: IndexText) -> None:
    """One text, "the parcel left the depot", in rows of every kind of owner."""
    text = "the parcel left the depot"
    index_text("a", text, agent="agent-a")
    index_text("a-u1", text, agent="agent-a", user="u1")
    index_text("a-u2", text, agent="agent-a", user="u2")
    index_text("a-t1", text, agent="agent-a", thread="t1")
    index_text("a-t2", text, agent="agent-a", thread="t2")
    index_text("b", text, agent="agent-b")
    index_text("shared", text)
    index_text("shared-t2", text, thread="t2")
    index_text("shared-u2", text, user="u2")
    index_text("note", text, agent="agent-a", source_type="note", index="notes", kind="x")


def keyword_sources(**options: object) -> list[str]:
    return sorted(sources(keyword_search("parcel", limit=100, **options)))  # type: ignore[arg-type]


def test_an_agent_filter_admits_that_agents_rows_and_those_of_no_agent(scoped_rows: None):
    # when
    found = keyword_sources(filter=EmbeddingFilter(agent_id="agent-b"))
    # then
    assert found == ["b", "shared", "shared-t2", "shared-u2"]


def test_a_thread_filter_admits_that_threads_rows_and_those_of_no_thread(scoped_rows: None):
    # when
    found = keyword_sources(filter=EmbeddingFilter(agent_id="agent-a", thread_id="t1"))
    # then
    assert found == ["a", "a-t1", "a-u1", "a-u2", "note", "shared", "shared-u2"]


def test_source_type_index_and_metadata_filters_match_exactly(scoped_rows: None):
    # when
    by_type = keyword_sources(filter=EmbeddingFilter(source_type="note"))
    by_index = keyword_sources(filter=EmbeddingFilter(index="notes"))
    by_metadata = keyword_sources(filter=EmbeddingFilter(metadata={"kind": "x"}))
    # then
    assert by_type == by_index == by_metadata == ["note"]


def test_a_scope_sees_its_agents_rows_and_the_shared_ones(scoped_rows: None):
    # when
    found = keyword_sources(grants=Grants.for_agents(["agent-b"]))
    # then: the shared rows of no agent, user or thread; not those naming a thread or user
    assert found == ["b", "shared"]


def test_a_scope_without_shared_rows_sees_only_its_agents(scoped_rows: None):
    # when
    found = keyword_sources(grants=Grants.for_agents(["agent-b"]), include_shared=False)
    # then
    assert found == ["b"]


def test_a_grant_naming_users_sees_only_those_users_rows(scoped_rows: None):
    # given
    grants = Grants.for_agents(["agent-a"], {"agent-a": ["u1"]})
    # when
    found = keyword_sources(grants=grants, include_shared=False)
    # then
    assert found == ["a-u1"]


def test_a_filter_cannot_widen_the_scope(scoped_rows: None):
    # when
    found = keyword_sources(
        grants=Grants.for_agents(["agent-b"]),
        include_shared=False,
        filter=EmbeddingFilter(agent_id="agent-a"),
    )
    # then
    assert found == []


def test_a_scope_of_no_grants_sees_only_shared_rows_or_nothing(scoped_rows: None):
    # when
    with_shared = keyword_sources(grants=Grants.nothing())
    without = keyword_sources(grants=Grants.nothing(), include_shared=False)
    # then
    assert (with_shared, without) == (["shared"], [])


def test_the_unrestricted_scope_sees_every_row(scoped_rows: None):
    # when
    found = keyword_sources(grants=Grants.everything(), include_shared=False)
    # then
    assert len(found) == 10


def test_statistics_are_those_of_the_rows_the_scope_sees(index_text: IndexText):
    # given agent-a's rows, and agent-b's, where "parcel" is everywhere
    mine = {"harbor": COLLECTION["harbor"], "clock": COLLECTION["clock"]}
    for source_id, text in mine.items():
        index_text(source_id, text, agent="agent-a")
    for n in range(5):
        index_text(f"b-{n}", "parcel parcel boxes", agent="agent-b")
    # when
    (hit,) = keyword_search("parcel", limit=10, grants=Grants.for_agents(["agent-a"]))
    # then: agent-b's rows neither count nor show
    assert hit.embedding.source_id == "harbor"
    assert hit.score == pytest.approx(bm25_over_every_row("parcel", mine)["harbor"], rel=1e-5)


# --- stores that keep no rows ----------------------------------------------------------


class KeywordOnlyStore:
    """A store outside the database with a keyword search of its own, blind to scope:
    it answers from the exact store and records the limits it was asked for."""

    def __init__(self) -> None:
        self.limits: list[int] = []

    def keyword_search(
        self, query: str, *, limit: int, filter: EmbeddingFilter | None
    ) -> list[SearchHit]:
        self.limits.append(limit)
        return keyword_search(query, limit=limit, filter=filter, store=ExactEmbeddingStore())


def test_a_store_with_its_own_keyword_search_is_asked_and_its_answer_scoped(
    index_text: IndexText,
):
    # given agent-b's rows outrank agent-a's only one
    for n in range(3):
        index_text(f"b-{n}", "parcel parcel parcel", agent="agent-b")
    index_text("a", "a parcel and a long text around the one word it shares", agent="agent-a")
    store = KeywordOnlyStore()
    # when
    hits = keyword_search(
        "parcel", limit=1, store=store, grants=Grants.for_agents(["agent-a", "agent-c"])
    )
    # then: asked again for more until a visible hit came
    assert sources(hits) == ["a"]
    assert store.limits == [1, 4]


def test_a_store_without_keyword_search_says_so():
    # given
    class VectorsOnlyStore:
        pass

    # when / then
    with pytest.raises(KeywordSearchUnavailable, match=r"^VectorsOnlyStore has no keyword search"):
        keyword_search("parcel", store=VectorsOnlyStore())  # type: ignore[arg-type]


def test_a_thread_of_zipfian_text_ranks_as_bm25s_over_every_row_of_it():
    # given 400 rows of words drawn with Zipf's law, and rows of another thread; as many
    # candidates as rows, so that only the bound decides how many are read
    rng = np.random.default_rng(7)
    vocabulary = [f"w{chr(97 + n % 26)}{chr(97 + n // 26 % 26)}x" for n in range(600)]
    weights = 1 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()

    def text(words: int) -> str:
        return " ".join(rng.choice(vocabulary, size=words, p=weights))

    texts = {f"row-{n}": text(int(rng.integers(3, 40))) for n in range(400)}
    store = ExactEmbeddingStore()
    store.add(
        [
            NewEmbedding(
                source_type="message",
                source_id=source_id,
                content=content,
                vector=[1.0, 0.0],
                metadata={"threadId": "zipf", "agentId": "agent"},
            )
            for source_id, content in texts.items()
        ]
        + [
            NewEmbedding(
                source_type="message",
                source_id=f"other-{n}",
                content=text(20),
                vector=[1.0, 0.0],
                metadata={"threadId": "other", "agentId": "agent"},
            )
            for n in range(50)
        ]
    )
    in_thread = EmbeddingFilter(thread_id="zipf")
    for _ in range(25):
        query = " ".join(rng.choice(vocabulary, size=int(rng.integers(1, 5)), p=weights))
        # when
        hits = keyword_search(query, limit=10, filter=in_thread, candidates=400)
        # then the scores of bm25s's ten best, each row with its own score
        expected = bm25_over_every_row(query, texts)
        best = sorted(expected.values(), reverse=True)[:10]
        assert [hit.score for hit in hits] == pytest.approx(best, rel=1e-6)
        for hit in hits:
            assert hit.score == pytest.approx(expected[hit.embedding.source_id], rel=1e-6)
