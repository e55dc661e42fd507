"""BM25 over a thread's entries from the keyword index, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import bm25s
import pytest

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.keywords.models import KeywordCorpus, KeywordPosting, KeywordTerm
from cogitator_memory.keywords.tokenizer import query_terms, tokenize
from cogitator_memory.search.entry_keywords import entry_bm25_scores, search_thread_entries
from cogitator_memory.threads import services

pytestmark = pytest.mark.django_db

TURNS = [
    "I adopted a puppy named Biscuit last weekend.",
    "Biscuit chewed my hiking boots, both of them.",
    "We went hiking near the lake on Sunday.",
    "The lake was frozen, so we skated instead of hiking.",
    "My sister visited and brought a cake for the puppy's birthday.",
    "Do you remember which boots I bought for the mountain trip?",
    "The weather report says snow for the whole week.",
    "Biscuit loves the snow and runs around the garden.",
]


def bm25s_ranking(query: str, documents: dict[str, str]) -> list[tuple[str, float]]:
    """bm25s indexing exactly these documents with the project's tokenizer."""
    ids = list(documents)
    retriever = bm25s.BM25(method="lucene")
    retriever.index([tokenize(documents[i]) for i in ids], show_progress=False)
    scores = retriever.get_scores(query_terms(query))
    ranked = [(ids[n], float(score)) for n, score in enumerate(scores) if score > 0]
    return sorted(ranked, key=lambda pair: (-pair[1], pair[0]))


def assert_ranked_as(hits: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [entry_id for entry_id, _ in hits] == [entry_id for entry_id, _ in expected]
    assert [score for _, score in hits] == pytest.approx([score for _, score in expected], rel=1e-6)


def fill(thread_id: str, texts: list[str], *, agent_id: str = "agent-1") -> dict[str, str]:
    services.create_thread(agent_id, thread_id=thread_id)
    documents = {}
    for n, text in enumerate(texts):
        role = "user" if n % 2 == 0 else "assistant"
        entry = services.add_entry(thread_id, role=role, content=text)
        documents[entry.pk] = text
    return documents


@pytest.mark.parametrize(
    "query", ["hiking boots", "Biscuit the puppy", "snow lake", "cake", "frozen mountain trip"]
)
def test_the_ranking_is_bm25s_over_the_threads_entries(query: str):
    # given a thread of eight messages
    documents = fill("dog", TURNS)
    # when
    hits = search_thread_entries("dog", query, limit=10)
    # then the same entries, order and scores as bm25s over the same texts
    assert_ranked_as(hits, bm25s_ranking(query, documents))


def test_the_limit_keeps_the_best():
    documents = fill("dog", TURNS)
    hits = search_thread_entries("dog", "hiking boots biscuit", limit=2)
    assert_ranked_as(hits, bm25s_ranking("hiking boots biscuit", documents)[:2])


def test_a_deleted_entry_is_never_found_and_leaves_the_statistics():
    # given
    documents = fill("dog", TURNS)
    gone = next(entry_id for entry_id, text in documents.items() if "chewed" in text)
    # when
    services.delete_entry(gone)
    # then
    del documents[gone]
    hits = search_thread_entries("dog", "hiking boots", limit=10)
    assert gone not in dict(hits)
    assert_ranked_as(hits, bm25s_ranking("hiking boots", documents))


def test_a_redacted_entry_is_never_found_and_leaves_the_statistics():
    # given
    documents = fill("dog", TURNS)
    redacted = next(entry_id for entry_id, text in documents.items() if "frozen" in text)
    # when
    services.redact_entry(redacted, reason="private")
    # then
    del documents[redacted]
    assert search_thread_entries("dog", "frozen", limit=10) == []
    hits = search_thread_entries("dog", "lake hiking", limit=10)
    assert_ranked_as(hits, bm25s_ranking("lake hiking", documents))
    assert entry_bm25_scores("dog", "lake", [redacted]) == {}


def test_entries_of_a_cleared_or_deleted_thread_are_gone_from_the_index():
    fill("dog", TURNS)
    fill("cat", ["The cat sleeps in the snow."])
    services.clear_thread("dog")
    assert search_thread_entries("dog", "snow", limit=10) == []
    services.delete_thread("cat")
    assert search_thread_entries("cat", "snow", limit=10) == []
    assert not KeywordPosting.objects.exists()
    assert set(KeywordCorpus.objects.values_list("documents", "total_length")) <= {(0, 0)}
    assert set(KeywordTerm.objects.values_list("documents", flat=True)) <= {0}


def test_other_threads_are_never_seen():
    # given the same words in another thread, of another agent
    documents = fill("dog", TURNS[:4])
    fill("other", TURNS, agent_id="agent-2")
    # when
    hits = search_thread_entries("dog", "snow cake hiking", limit=10)
    # then only this thread's entries, with this thread's statistics
    assert {entry_id for entry_id, _ in hits} <= set(documents)
    assert_ranked_as(hits, bm25s_ranking("snow cake hiking", documents))
    assert search_thread_entries("dog", "garden", limit=10) == []
    assert search_thread_entries("nobody", "garden", limit=10) == []


def test_before_seq_and_excluded_ids_narrow_the_hits_not_the_statistics():
    # given
    documents = fill("dog", TURNS)
    ids = list(documents)
    expected = bm25s_ranking("biscuit snow hiking", documents)
    # when entries from the seventh on and the second are left out
    hits = search_thread_entries(
        "dog", "biscuit snow hiking", limit=10, before_seq=7, exclude_ids=[ids[1]]
    )
    # then the others keep the scores of the whole thread
    allowed = set(ids[:6]) - {ids[1]}
    assert_ranked_as(hits, [pair for pair in expected if pair[0] in allowed])


def test_events_are_not_indexed_and_tool_results_are():
    services.create_thread("agent-1", thread_id="tools")
    services.add_entry("tools", type="label", event={"label": "hiking"})
    result = services.add_entry(
        "tools",
        type="tool_result",
        tool_call_id="call-1",
        tool_results=[{"toolCallId": "call-1", "result": "Trail map: hiking loop, 5 km"}],
    )
    assert [entry_id for entry_id, _ in search_thread_entries("tools", "hiking", limit=5)] == [
        result.pk
    ]


def test_a_fork_indexes_its_copies():
    documents = fill("dog", TURNS)
    last = list(documents)[-1]
    fork = services.fork_thread("dog", last, "dog-fork")
    hits = search_thread_entries(fork.pk, "hiking boots", limit=10)
    assert [score for _, score in hits] == pytest.approx(
        [score for _, score in bm25s_ranking("hiking boots", documents)]
    )
    assert not {entry_id for entry_id, _ in hits} & set(documents)


def test_batch_scores_match_the_search():
    documents = fill("dog", TURNS)
    hits = dict(search_thread_entries("dog", "biscuit boots", limit=10))
    scores = entry_bm25_scores("dog", "biscuit boots", list(documents))
    assert {key: value for key, value in scores.items() if value} == pytest.approx(hits)
    assert set(scores) == set(documents)


def test_a_query_of_stopwords_only_or_no_words_finds_nothing():
    fill("dog", TURNS)
    assert search_thread_entries("dog", "the and of", limit=10) == []
    assert search_thread_entries("dog", "?!", limit=10) == []


def test_a_bad_limit_is_refused():
    with pytest.raises(InvalidInput):
        search_thread_entries("dog", "snow", limit=0)
