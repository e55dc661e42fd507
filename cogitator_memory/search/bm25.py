"""Keyword search: BM25 over the content of embeddings, within the same filters (and
scope) as vector search.

On the stores that keep embeddings as database rows (the exact store, pgvector), the
keyword index (``keywords/``: a posting per row and stemmed word, with statistics per
corpus, written in the transaction that writes the row) gives candidates and statistics:

1. The query's words, stemmed, stopwords left out (``tokenizer.query_terms``).
2. The corpora the filter and scope admit: a corpus is the rows of one thread, agent,
   user, source type and index, so every column condition of a filter or a scope holds
   for all of a corpus's rows or none. Their rows' number and tokens and, per word, the
   rows holding it are summed from the corpora: BM25's statistics over every admitted
   row, exact.
3. ``search/keyword_index.py`` ranks: each word's postings strongest first, until no
   row left out could score above the ``limit``-th hit (the ceilings of what is not
   read); BM25's arithmetic of ``search/bm25_formula.py`` (bm25s's: Lucene's BM25, k1
   1.5, b 0.75); ties go to the smaller id.
   Only when the candidate budget (postings read) runs out first can a hit be missed;
   corpora the process holds in memory (``keywords/cache.py``) are ranked exactly.
4. The best rows are checked against their sources (``scoping.current_q``: a message's
   entry still there and not redacted, its thread still open to the caller).

A filter on metadata, which no corpus column holds, and a query of stopwords only (whose
stopwords the index does not keep) are searched as before the index: rows found by a
substring match on the words' fragments (``tokenizer.fragments``), tokenized and ranked
with the statistics of all admitted rows (``_scan_keyword_search``), by the same
arithmetic: both paths give a row the same score.

Each step is a portable query or runs in Python, so SQLite and PostgreSQL return the
same hits in the same order with the same scores.

Other stores (Qdrant) have no rows to query: one with a ``keyword_search(query, *, limit,
filter)`` method is asked through it; the others raise ``KeywordSearchUnavailable``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db.models import Count, Q, Sum
from django.db.models.functions import Length

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.querysets import EmbeddingQuerySet
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.stores.base import (
    DatabaseEmbeddingStore,
    filter_columns_q,
    filtered,
    stored,
)
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore, SearchHit
from cogitator_memory.exceptions import InvalidInput, KeywordSearchUnavailable
from cogitator_memory.grants import Grants
from cogitator_memory.keywords.models import DocumentKind, KeywordCorpus
from cogitator_memory.keywords.tokenizer import fragments, query_terms, stopwords_only, tokenize
from cogitator_memory.limits import check_limit
from cogitator_memory.search.bm25_formula import CollectionStats, Document, bm25_scores, idf
from cogitator_memory.search.keyword_index import corpora_of, rank_documents
from cogitator_memory.search.scoping import current_q, open_threads_q, search_visible

# Candidates read per search at most: postings from the index (a block of 200 costs
# about 0.3 ms on PostgreSQL, bench/RESULTS.md "The keyword index"), rows by the scan
# (about 0.3 s for 5,000 rows of 50 words on 2 cores).
MAX_CANDIDATES = 5000
# Rows read from the database per round trip while collecting candidates.
READ_CHUNK = 1000
# The longest query taken, in characters.
MAX_QUERY_LENGTH = 10_000
# Hits ranked beyond ``limit`` in case some of the best fail the check of their source.
RECHECK_MARGIN = 10


def check_query(query: str) -> str:
    """``query`` if it is a text with something in it; ``InvalidInput`` otherwise."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput({"query": "A search needs a query text."})
    if len(query) > MAX_QUERY_LENGTH:
        raise InvalidInput({"query": f"A query is at most {MAX_QUERY_LENGTH} characters."})
    return query


def _holds(term: str) -> Q:
    # A row holding a word whose token is ``term`` holds one of its fragments (the stem
    # but its last letter): the rows found are tokenized to tell which really hold it.
    # LIKE folds only ASCII letters on SQLite; a fragment with other letters is matched by
    # a case-insensitive regex, which SQLite runs with Python's re, folding case as
    # PostgreSQL does. Fragments are runs of word characters: nothing needs escaping.
    condition = Q()
    for fragment in fragments(term):
        if fragment.isascii():
            condition |= Q(content__icontains=fragment)
        else:
            condition |= Q(content__iregex=fragment)
    return condition


def _holding_any(terms: Iterable[str]) -> Q:
    condition = Q()
    for term in terms:
        condition |= _holds(term)
    return condition


@dataclass
class _Candidates:
    ids: list[str]
    documents: list[Document]
    characters: int
    complete: bool


def _read_candidates(
    rows: EmbeddingQuerySet,
    *,
    holding: Sequence[str],
    terms: Sequence[str],
    limit: int,
    found: _Candidates,
    seen: set[str],
    keep_stopwords: bool,
) -> bool:
    """Add to ``found`` the newest rows that hold one of the words ``holding`` as a token,
    up to ``limit`` rows in all; False when rows were left unread."""
    wanted = set(holding)
    matching = rows.filter(_holding_any(holding)).order_by("-created_at", "-id")
    for row_id, content in matching.values_list("id", "content").iterator(chunk_size=READ_CHUNK):
        if row_id in seen:
            continue
        tokens = tokenize(content, keep_stopwords=keep_stopwords)
        if wanted.isdisjoint(tokens):
            continue
        if len(found.ids) == limit:
            return False
        seen.add(row_id)
        found.ids.append(row_id)
        found.documents.append(Document.of(tokens, terms))
        found.characters += len(content)
    return True


def _index_keyword_search(
    terms: Sequence[str],
    *,
    limit: int,
    filter: EmbeddingFilter | None,
    grants: Grants | None,
    include_shared: bool,
    candidates: int,
) -> list[SearchHit]:
    corpora = KeywordCorpus.objects.filter(kind=DocumentKind.EMBEDDING).filter(
        open_threads_q(grants)
    )
    if filter is not None:
        corpora = corpora.filter(filter_columns_q(filter))
    if grants is not None:
        # The corpora carry their rows' agent, user and thread: the rows' own condition.
        corpora = corpora.visible_to(grants, include_shared=include_shared)
    # A few more than asked: a row whose entry went outside the services (a restored
    # backup) is still indexed until pruned, and is dropped below.
    ranked = rank_documents(
        corpora_of(corpora), terms, limit=limit, budget=candidates, take=limit + RECHECK_MARGIN
    )
    hits: list[SearchHit] = []
    for start in range(0, len(ranked), limit + RECHECK_MARGIN):
        chunk = ranked[start : start + limit + RECHECK_MARGIN]
        rows = Embedding.objects.filter(current_q(grants)).in_bulk([row_id for row_id, _ in chunk])
        hits.extend(
            SearchHit(embedding=stored(rows[row_id]), score=score)
            for row_id, score in chunk
            if row_id in rows
        )
        if len(hits) >= limit:
            break
    return hits[:limit]


def _scan_keyword_search(
    terms: Sequence[str],
    *,
    limit: int,
    filter: EmbeddingFilter | None,
    grants: Grants | None,
    include_shared: bool,
    candidates: int,
) -> list[SearchHit]:
    rows = filtered(Embedding.objects.all(), filter).filter(current_q(grants))
    if grants is not None:
        rows = rows.visible_to(grants, include_shared=include_shared)
    # One pass over the rows in reach: their number, their characters, and how many hold
    # each word as a substring (at least as many as hold it as a token).
    totals = rows.aggregate(
        documents=Count("pk"),
        characters=Sum(Length("content")),
        **{f"t{n}": Count("pk", filter=_holds(term)) for n, term in enumerate(terms)},
    )
    documents = int(totals["documents"] or 0)
    holders = {term: int(totals[f"t{n}"]) for n, term in enumerate(terms)}
    present = sorted((t for t in terms if holders[t]), key=lambda t: (holders[t], t))
    if not present:
        return []
    # The rarest words choose the candidates, as many of them as the candidate limit
    # allows: a row's score comes mostly from the rare words it holds, and every word it
    # holds is counted however it was chosen.
    chosen = [present[0]]
    for term in present[1:]:
        if sum(holders[t] for t in chosen) + holders[term] > candidates:
            break
        chosen.append(term)
    rest = present[len(chosen) :]
    # A query of stopwords only is searched over documents that keep theirs.
    keep_stopwords = stopwords_only(list(terms))
    found = _Candidates(ids=[], documents=[], characters=0, complete=True)
    seen: set[str] = set()
    found.complete = _read_candidates(
        rows,
        holding=chosen,
        terms=present,
        limit=candidates,
        found=found,
        seen=seen,
        keep_stopwords=keep_stopwords,
    )
    if not found.ids and not rest:
        return []
    frequencies = dict(holders)
    if found.complete:
        # Every row holding a chosen word was read: count the rows holding it as a token.
        for term in chosen:
            frequencies[term] = sum(term in d.counts for d in found.documents)

    def statistics() -> CollectionStats:
        tokens = sum(document.length for document in found.documents)
        per_character = tokens / max(found.characters, 1)
        average = max(int(totals["characters"] or 0) / max(documents, 1) * per_character, 1.0)
        return CollectionStats(documents, average, frequencies)

    scores = bm25_scores(present, found.documents, statistics()).tolist()
    # A row holding only the other words scores less than the sum of their idf (each
    # word's term-frequency part is below 1). When the limit-th score reaches that, no
    # such row can enter the hits; else the newest of them fill the candidate limit.
    if rest and found.complete:
        bound = sum(idf(frequencies[term], documents) for term in rest)
        kth = sorted(scores, reverse=True)[limit - 1] if len(scores) >= limit else 0.0
        if kth < bound and len(found.ids) < candidates:
            _read_candidates(
                rows,
                holding=rest,
                terms=present,
                limit=candidates,
                found=found,
                seen=seen,
                keep_stopwords=keep_stopwords,
            )
            scores = bm25_scores(present, found.documents, statistics()).tolist()
    if not found.ids:
        return []
    best = heapq.nsmallest(limit, range(len(found.ids)), key=lambda n: (-scores[n], found.ids[n]))
    by_id = Embedding.objects.in_bulk([found.ids[n] for n in best])
    return [
        SearchHit(embedding=stored(by_id[found.ids[n]]), score=float(scores[n]))
        for n in best
        if found.ids[n] in by_id
    ]


def keyword_search(
    query: str,
    *,
    limit: int = 10,
    filter: EmbeddingFilter | None = None,
    store: EmbeddingStore | None = None,
    grants: Grants | None = None,
    include_shared: bool = True,
    candidates: int = MAX_CANDIDATES,
) -> list[SearchHit]:
    """The ``limit`` embeddings whose content best matches the words of ``query`` (BM25),
    best first, among those ``filter`` admits and ``grants`` reach.

    ``store``: the configured store when None. ``grants``: None for trusted code (the
    filter alone decides); otherwise only the rows of its grants, plus, when
    ``include_shared``, the rows of no agent, user or thread (``search/scoping.py``).
    ``candidates``: the most postings (from the index) or rows (by the scan) read;
    the index reads each word's strongest first, the scan its newest rows.

    A query of no words (only punctuation) finds nothing. Raises ``InvalidInput`` for an
    empty query or a bad limit, ``KeywordSearchUnavailable`` for a store that keeps no
    rows in the database and has no keyword search of its own.
    """
    check_query(query)
    check_limit(limit)
    check_limit(candidates, field="candidates")
    terms = query_terms(query)
    if not terms:
        return []
    store = store if store is not None else get_embedding_store()
    if isinstance(store, DatabaseEmbeddingStore):
        indexed = not (filter is not None and filter.metadata) and not stopwords_only(terms)
        search = _index_keyword_search if indexed else _scan_keyword_search
        return search(
            terms,
            limit=limit,
            filter=filter,
            grants=grants,
            include_shared=include_shared,
            candidates=candidates,
        )
    own_search = getattr(store, "keyword_search", None)
    if own_search is None:
        raise KeywordSearchUnavailable(store)

    def run(store_filter: EmbeddingFilter | None, fetch: int) -> list[SearchHit]:
        hits: list[SearchHit] = own_search(query, limit=fetch, filter=store_filter)
        return hits

    return search_visible(
        run, limit=limit, filter=filter, grants=grants, include_shared=include_shared
    )
