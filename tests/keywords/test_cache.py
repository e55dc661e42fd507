"""The process-local cache of keyword postings: searches outside transactions rank from
memory exactly as from the tables, and every write (added, deleted, redacted, a new owner,
rolled back) is seen by the next search, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext, override_settings

from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import EmbeddingFilter, NewEmbedding
from cogitator_memory.keywords import cache
from cogitator_memory.keywords.models import KeywordCorpus
from cogitator_memory.search.bm25 import keyword_search
from cogitator_memory.search.entry_keywords import entry_bm25_scores, search_thread_entries
from cogitator_memory.threads import services
from tests.search.test_entry_keywords import TURNS, assert_ranked_as, bm25s_ranking, fill

# Autocommit, as a web request or a worker without ATOMIC_REQUESTS runs a search.
pytestmark = pytest.mark.django_db(transaction=True)

NO_CACHE = {"KEYWORDS": {"CACHE_POSTINGS": 0}}


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    cache.clear_cache()
    yield
    cache.clear_cache()


def cached_corpora() -> int:
    return len(cache._cache.corpora)


def zipfian_texts(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(300)]
    weights = [1 / (n + 1) for n in range(300)]
    return [
        " ".join(rng.choices(words, weights=weights, k=rng.randint(3, 25))) for _ in range(count)
    ]


def test_a_cached_thread_ranks_as_bm25s_and_as_the_tables_and_costs_one_query():
    # given a thread of 300 entries of Zipfian words
    documents = fill("big", zipfian_texts(300))
    queries = ["w0 w5", "w1 w2 w3", "w40 w250", "w7", "w0 w1 w2 w3 w4 w5 w6"]
    for query in queries:
        # when searched from the tables, then from the cache
        with override_settings(COGITATOR_MEMORY=NO_CACHE):
            from_tables = search_thread_entries("big", query, limit=10)
        first = search_thread_entries("big", query, limit=10)
        with CaptureQueriesContext(connection) as queries_run:
            again = search_thread_entries("big", query, limit=10)
        # then all three are bm25s's ranking over every entry
        expected = bm25s_ranking(query, documents)[:10]
        assert_ranked_as(from_tables, expected)
        assert_ranked_as(first, expected)
        assert_ranked_as(again, expected)
        # and a search of a cached, unchanged thread reads its corpus row only
        assert len(queries_run) == 1
    assert cached_corpora() == 1


def test_before_seq_and_excluded_ids_narrow_the_cached_hits_not_the_statistics():
    documents = fill("dog", TURNS)
    search_thread_entries("dog", "biscuit", limit=10)
    ids = list(documents)
    hits = search_thread_entries(
        "dog", "biscuit hiking snow", limit=10, before_seq=7, exclude_ids=[ids[1]]
    )
    expected = [
        (entry_id, score)
        for entry_id, score in bm25s_ranking("biscuit hiking snow", documents)
        if ids.index(entry_id) < 6 and entry_id != ids[1]
    ]
    assert_ranked_as(hits, expected)
    assert cached_corpora() == 1


def test_an_entry_added_after_a_cached_search_is_found_by_the_next_one():
    # given a cached thread
    documents = fill("dog", TURNS)
    search_thread_entries("dog", "biscuit", limit=10)
    # when an entry is added
    entry = services.add_entry("dog", role="user", content="Biscuit found a bone in the snow.")
    documents[entry.pk] = entry.content
    # then the next search finds it, with statistics counting it, reading only what is new
    with CaptureQueriesContext(connection) as queries_run:
        hits = search_thread_entries("dog", "biscuit snow bone", limit=10)
    assert hits[0][0] == entry.pk
    assert_ranked_as(hits, bm25s_ranking("biscuit snow bone", documents))
    assert len(queries_run) == 2
    assert "id >" in queries_run[1]["sql"]


def test_deleted_and_redacted_entries_leave_the_cache_at_the_next_search():
    # given a cached thread
    documents = fill("dog", TURNS)
    assert search_thread_entries("dog", "frozen chewed", limit=10)
    gone = next(entry_id for entry_id, text in documents.items() if "chewed" in text)
    redacted = next(entry_id for entry_id, text in documents.items() if "frozen" in text)
    # when one entry is deleted and another redacted
    services.delete_entry(gone)
    services.redact_entry(redacted, reason="private")
    del documents[gone], documents[redacted]
    # then neither is found nor scored, and the statistics are those of the others
    assert search_thread_entries("dog", "frozen chewed", limit=10) == []
    assert entry_bm25_scores("dog", "frozen chewed lake", [gone, redacted]) == {}
    hits = search_thread_entries("dog", "hiking boots lake", limit=10)
    assert_ranked_as(hits, bm25s_ranking("hiking boots lake", documents))


def test_a_cleared_thread_finds_nothing_from_the_cache():
    fill("dog", TURNS)
    assert search_thread_entries("dog", "biscuit", limit=10)
    services.clear_thread("dog")
    assert search_thread_entries("dog", "biscuit", limit=10) == []


def test_batch_scores_from_the_cache_equal_those_from_the_tables():
    documents = fill("dog", TURNS)
    ids = list(documents)
    with override_settings(COGITATOR_MEMORY=NO_CACHE):
        from_tables = entry_bm25_scores("dog", "biscuit snow boots", [*ids, "entry_none"])
    search_thread_entries("dog", "biscuit", limit=10)
    from_cache = entry_bm25_scores("dog", "biscuit snow boots", [*ids, "entry_none"])
    assert cached_corpora() == 1
    assert from_cache == pytest.approx(from_tables, rel=1e-6)
    assert set(from_cache) == set(ids)


def test_a_write_rolled_back_never_reaches_the_cache():
    # given a cached thread
    documents = fill("dog", TURNS)
    search_thread_entries("dog", "biscuit", limit=10)
    # when, inside a transaction that is rolled back, an entry is added and searched
    with pytest.raises(RuntimeError), transaction.atomic():
        entry = services.add_entry("dog", role="user", content="A walrus ate Biscuit's dinner.")
        # the transaction sees its own entry (from the tables)
        assert search_thread_entries("dog", "walrus", limit=10)[0][0] == entry.pk
        raise RuntimeError("rolled back")
    # and after it, with another entry written, the search sees that one and not the first
    other = services.add_entry("dog", role="user", content="Biscuit slept all afternoon.")
    documents[other.pk] = other.content
    assert search_thread_entries("dog", "walrus", limit=10) == []
    hits = search_thread_entries("dog", "biscuit slept", limit=10)
    assert_ranked_as(hits, bm25s_ranking("biscuit slept", documents))


def test_inside_a_transaction_a_current_copy_is_used_and_a_stale_one_is_not():
    fill("dog", TURNS)
    search_thread_entries("dog", "biscuit", limit=10)
    with transaction.atomic():
        with CaptureQueriesContext(connection) as queries_run:
            search_thread_entries("dog", "biscuit", limit=10)
        assert len(queries_run) == 1
        services.add_entry("dog", role="user", content="Biscuit again.")
        with CaptureQueriesContext(connection) as queries_run:
            hits = search_thread_entries("dog", "again", limit=10)
        assert len(hits) == 1
        # read from the tables, the cache left as it was
        assert not any("id >" in query["sql"] for query in queries_run)


def test_the_cache_keeps_at_most_its_postings_least_recently_searched_first():
    # given three threads of the same entries, and the postings of one
    documents = {name: fill(name, TURNS) for name in ("a", "b", "c")}
    search_thread_entries("a", "biscuit", limit=10)
    one = cache._cache.postings
    cache.clear_cache()
    with override_settings(COGITATOR_MEMORY={"KEYWORDS": {"CACHE_POSTINGS": 2 * one + one // 2}}):
        # when the three are searched one after another, then the first again
        for name in ("a", "b", "c", "a"):
            hits = search_thread_entries(name, "biscuit snow", limit=10)
            # then every search ranks as bm25s
            assert_ranked_as(hits, bm25s_ranking("biscuit snow", documents[name]))
        # and the cache holds the two searched last, within its bound
        assert cache._cache.postings == 2 * one
        held = {corpus_id for *_, corpus_id in cache._cache.corpora}
        assert held == {corpus_of("c"), corpus_of("a")}


def corpus_of(thread_id: str) -> int:
    from cogitator_memory.search.entry_keywords import _thread_corpus

    (corpus_id,) = _thread_corpus(thread_id).ids
    return corpus_id


def test_a_cache_of_no_postings_reads_the_tables():
    fill("dog", TURNS)
    with override_settings(COGITATOR_MEMORY=NO_CACHE):
        assert search_thread_entries("dog", "biscuit", limit=10)
    assert cached_corpora() == 0


def embedding(source_id: str, content: str, **metadata: str) -> NewEmbedding:
    return NewEmbedding(
        source_type="note",
        source_id=source_id,
        content=content,
        vector=[1.0, 0.5, 0.25],
        metadata={"agentId": "ag", **metadata},
    )


def test_keyword_search_from_the_cache_follows_a_new_owner_and_a_deleted_row():
    # given rows of one thread under u1, searched (and so cached) for u1
    store = ExactEmbeddingStore()
    store.add(
        [
            embedding("a", "Hiking boots by the lake.", threadId="t1", userId="u1"),
            embedding("b", "The lake froze over.", threadId="t1", userId="u1"),
            embedding("c", "Boots for the lake, of u2.", threadId="t2", userId="u2"),
        ]
    )
    of_u1 = EmbeddingFilter(user_id="u1")
    of_u2 = EmbeddingFilter(user_id="u2")
    assert sorted(hit.embedding.source_id for hit in keyword_search("lake", filter=of_u1)) == [
        "a",
        "b",
    ]
    assert cached_corpora() == 1
    # when the thread moves to u2
    store.set_owner("t1", "u2")
    # then u1 finds none of it, u2 finds it all, ranked as from the tables
    assert keyword_search("lake", filter=of_u1) == []
    found = keyword_search("lake boots", filter=of_u2)
    with override_settings(COGITATOR_MEMORY=NO_CACHE):
        expected = keyword_search("lake boots", filter=of_u2)
    assert [(hit.embedding.id, hit.score) for hit in found] == [
        (hit.embedding.id, pytest.approx(hit.score, rel=1e-6)) for hit in expected
    ]
    assert sorted(hit.embedding.source_id for hit in found) == ["a", "b", "c"]
    # and a row deleted is not found from the cache
    store.delete_by_sources(["a"])
    assert "a" not in [hit.embedding.source_id for hit in keyword_search("hiking", filter=of_u2)]


def test_a_corpus_over_half_the_cache_is_read_from_the_tables_and_ranks_the_same():
    # given a thread, and the postings of its corpus
    documents = fill("dog", TURNS)
    search_thread_entries("dog", "biscuit", limit=10)
    one = cache._cache.postings
    cache.clear_cache()
    # when the cache is smaller than twice that corpus
    with override_settings(COGITATOR_MEMORY={"KEYWORDS": {"CACHE_POSTINGS": one + 1}}):
        hits = search_thread_entries("dog", "biscuit snow", limit=10)
    # then nothing is cached, and the ranking is bm25s's all the same
    assert cached_corpora() == 0
    assert_ranked_as(hits, bm25s_ranking("biscuit snow", documents))


def test_forgetting_corpora_drops_their_copies():
    fill("kept", ["alpha beta", "beta gamma"])
    fill("gone", ["alpha delta", "delta epsilon"])
    search_thread_entries("kept", "alpha", limit=5)
    search_thread_entries("gone", "alpha", limit=5)
    assert cached_corpora() == 2
    gone = list(KeywordCorpus.objects.filter(thread_id="gone").values_list("pk", flat=True))

    assert cache.forget_corpora(gone) == 1
    assert cached_corpora() == 1
    assert cache.forget_corpora([]) == 0
