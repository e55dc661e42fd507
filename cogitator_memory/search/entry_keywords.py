"""BM25 over a thread's conversation entries, with or without an embedding provider.

The keyword index keeps every message and tool result of a thread that is not redacted
(``keywords/entries.py``: written with the entry, removed in the transaction that
deletes or redacts it), one corpus per thread. Statistics are those of all of them;
``before_seq`` and ``exclude_ids`` only narrow which entries may be hits. Ranking is
``search/keyword_index.py``'s: bm25s's arithmetic, exact from the process's postings
cache (``keywords/cache.py``: one query when the thread is cached and unchanged), and from
the tables exact unless the candidate budget (postings read) runs out before no entry
left out could be a hit. A thread's entries are not counted per term in ``KeywordTerm``:
the cache holds those counts, and the tables count them from the term index.

A query of stopwords only finds nothing here: the index keeps no stopwords.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from django.db import connections, router

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.keywords.models import DocumentKind, KeywordCorpus
from cogitator_memory.keywords.postings import COUNTED_KINDS, corpus_key
from cogitator_memory.keywords.tokenizer import query_terms, stopwords_only
from cogitator_memory.limits import check_limit
from cogitator_memory.search.keyword_index import (
    Corpora,
    Eligible,
    rank_documents,
    score_documents,
)

__all__ = ["entry_bm25_scores", "search_thread_entries"]

# Postings read per search at most before the candidates' own counts
# (see ``search/keyword_index.py``).
MAX_ENTRY_CANDIDATES = 5000


def _thread_corpus(thread_id: str) -> Corpora:
    """The thread's corpus row, by its key: one plain query (no ORM to compile), which
    is all a search of a cached, unchanged thread reads."""
    key = corpus_key(DocumentKind.ENTRY, thread_id, None, None, "", "")
    connection = connections[router.db_for_read(KeywordCorpus)]
    table = connection.ops.quote_name(KeywordCorpus._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, documents, total_length, version, removals FROM {table} WHERE key = %s",
            [key],
        )
        return Corpora.of(cursor.fetchall(), counted=DocumentKind.ENTRY in COUNTED_KINDS)


def _terms(query: str) -> list[str]:
    if not isinstance(query, str):
        raise InvalidInput({"query": "A search needs a query text."})
    terms = query_terms(query)
    return [] if stopwords_only(terms) else terms


def search_thread_entries(
    thread_id: str,
    query: str,
    *,
    limit: int,
    before_seq: int | None = None,
    exclude_ids: Collection[str] = (),
) -> list[tuple[str, float]]:
    """The ``limit`` messages and tool results of a thread that best match ``query``
    (BM25), as (entry id, score), best first, ties to the smaller id.

    Only entries before ``before_seq`` (when given) and not in ``exclude_ids`` are
    returned; statistics count every indexed entry of the thread. Redacted and deleted
    entries are never found; a thread without entries (or unknown) finds nothing.
    Raises ``InvalidInput`` for a bad limit or a query that is not a text.
    """
    check_limit(limit)
    terms = _terms(query)
    if not terms:
        return []
    corpora = _thread_corpus(thread_id)
    if not corpora.ids:
        return []
    eligible = Eligible(before_seq=before_seq, excluded=tuple(dict.fromkeys(exclude_ids)))
    return rank_documents(
        corpora, terms, limit=limit, budget=MAX_ENTRY_CANDIDATES, eligible=eligible
    )


def entry_bm25_scores(thread_id: str, query: str, entry_ids: Sequence[str]) -> dict[str, float]:
    """The BM25 score of each of these entries of the thread for ``query``, with the
    thread's statistics: 0 for an entry holding none of its words; entries not indexed
    (events, redacted, gone, of another thread) are left out."""
    terms = _terms(query)
    if not entry_ids:
        return {}
    corpora = _thread_corpus(thread_id)
    if not corpora.ids:
        return {}
    return score_documents(corpora, terms, list(dict.fromkeys(entry_ids)))
