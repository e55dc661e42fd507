"""BM25 read from the keyword index (``keywords/models.py``): statistics and candidates
come from postings, never from scanning text.

``rank_documents`` ranks the documents of some corpora for a query's terms:

1. Statistics of every document of those corpora: their number and tokens (summed over
   the corpora's rows), and per term the documents holding it (summed over
   ``KeywordTerm``), so idf and length normalization are those of BM25 over the whole
   collection, exactly.
2. Each term's postings are read strongest first (most occurrences, then shortest
   document, then newest: the index's order), a block at a time, the term with the
   highest ceiling first. A term's ceiling is the most a posting not read yet can add
   to a score: its idf times the frequency part of the last posting read (or of one
   occurrence fewer in the shortest document that could hold it), 0 once all are read.
3. A document not read in any term scores at most the sum of the ceilings: once the
   ``limit``-th best score known reaches it, no such document can be a hit. A candidate
   not read in some terms can gain at most their ceilings: those that could still reach
   the ``limit``-th score have their counts looked up (or, when there are many, the
   postings are read on, which lowers the ceilings of all of them). The ranking is then
   BM25's over every document, exactly.
4. ``budget`` caps the postings read before the lookups: a query of common words only
   may stop there, the one case where a hit can be missed.

When the process holds the corpora's postings in memory (``keywords/cache.py``, checked
against the corpus rows read in step 1), steps 2 to 4 are replaced by scoring every
document holding a query term from memory, with the same arithmetic: exact, whatever the
budget, and one query in all.

Scores are BM25's arithmetic of ``search/bm25_formula.py`` (bm25s's: Lucene's idf, k1 1.5,
b 0.75, float32 sums in query order), so a ranking equals bm25s's over the same documents,
and keyword search's scan ranks with the same numbers. Every statement is portable SQL:
SQLite and PostgreSQL give the same hits and scores.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connections, router
from django.db.models import Model, QuerySet

from cogitator_memory.keywords.cache import CorpusRow, CorpusView, corpus_views
from cogitator_memory.keywords.models import (
    MAX_TERM_LENGTH,
    KeywordCorpus,
    KeywordPosting,
    KeywordTerm,
)
from cogitator_memory.keywords.postings import EMPTY_TERM
from cogitator_memory.search.bm25_formula import CollectionStats, saturation, term_scores

__all__ = [
    "Corpora",
    "Eligible",
    "corpora_of",
    "index_statistics",
    "rank_documents",
    "score_documents",
]

# Postings of the first block read of a term; each next block of it is as long as all
# read before (one query each).
FIRST_BLOCK = 200
# Candidates that may still reach the hits looked up one by one at most; past it, a
# term's postings are read on (a block costs about what a few dozen lookups do).
LOOKUP_LIMIT = 64
# Document ids per query when reading a set of candidates' postings.
ID_CHUNK = 500


def index_terms(terms: Sequence[str]) -> list[str]:
    """Query terms as the index keeps them (cut to its longest term), distinct."""
    return list(dict.fromkeys(term[:MAX_TERM_LENGTH] for term in terms if term))


@dataclass(frozen=True)
class Corpora:
    """The corpora a search admits: their ids, their documents and tokens summed, and
    their rows (which tell the cache whether its copies are current)."""

    ids: list[int]
    documents: int
    tokens: int
    rows: tuple[CorpusRow, ...] = ()
    # Whether ``KeywordTerm`` counts their documents per term (``COUNTED_KINDS``); if not,
    # they are counted from the postings.
    counted: bool = True

    @classmethod
    def of(cls, rows: Iterable[tuple[int, int, int, int, int]], *, counted: bool = True) -> Corpora:
        """From (id, documents, total_length, version, removals) rows."""
        listed = [CorpusRow(*row) for row in rows]
        return cls(
            [row.id for row in listed],
            sum(row.documents for row in listed),
            sum(row.total_length for row in listed),
            tuple(listed),
            counted,
        )


def corpora_of(queryset: QuerySet[KeywordCorpus]) -> Corpora:
    """The corpora of ``queryset``, with their statistics, in one query."""
    return Corpora.of(
        queryset.values_list("id", "documents", "total_length", "version", "removals")
    )


def _placeholders(values: Sequence[object]) -> str:
    return ", ".join(["%s"] * len(values))


def _table(model: type[Model]) -> str:
    quoted: str = connections[router.db_for_read(model)].ops.quote_name(model._meta.db_table)
    return quoted


def _fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    # Plain SQL: these few statements run on every search, and compiling them through
    # the ORM costs more than running them.
    with connections[router.db_for_read(KeywordPosting)].cursor() as cursor:
        cursor.execute(sql, list(params))
        return list(cursor.fetchall())


def index_statistics(corpora: Corpora, terms: Sequence[str]) -> CollectionStats:
    """The statistics of every document of these corpora, for these terms: one query on
    ``KeywordTerm`` (or on the postings, for corpora it does not count)."""
    frequencies: dict[str, int] = {}
    if corpora.ids and terms:
        # Corpora without term counts: one posting per document and term, counted.
        held, table = (
            ("SUM(documents)", KeywordTerm) if corpora.counted else ("COUNT(*)", KeywordPosting)
        )
        rows = _fetch(
            f"SELECT term, {held} FROM {_table(table)} "
            f"WHERE corpus_id IN ({_placeholders(corpora.ids)}) "
            f"AND term IN ({_placeholders(terms)}) GROUP BY term",
            [*corpora.ids, *terms],
        )
        frequencies = {term: int(count) for term, count in rows if count}
    # bm25s divides by the mean length; a collection of empty documents scores nothing.
    documents, tokens = corpora.documents, corpora.tokens
    average = tokens / documents if documents and tokens else 1.0
    return CollectionStats(documents, average, frequencies)


@dataclass(frozen=True)
class Eligible:
    """Which documents may be hits (statistics count every document): an entry before
    ``before_seq``, none of ``excluded``."""

    before_seq: int | None = None
    excluded: tuple[str, ...] = ()

    def sql(self) -> tuple[str, list[Any]]:
        condition, params = "", list[Any]()
        if self.before_seq is not None:
            condition += " AND seq < %s"
            params.append(self.before_seq)
        if self.excluded:
            condition += f" AND document_id NOT IN ({_placeholders(self.excluded)})"
            params.extend(self.excluded)
        return condition, params


class _Candidates:
    """Documents read so far: their lengths and their counts of the query's terms, and
    which counts are known, in numpy arrays that grow as documents come."""

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = list(terms)
        self.columns = {term: n for n, term in enumerate(self.terms)}
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self.lengths = np.zeros(0, dtype=np.float64)
        self.counts = np.zeros((0, len(self.terms)), dtype=np.float64)
        self.known = np.zeros((0, len(self.terms)), dtype=bool)

    def __len__(self) -> int:
        return len(self.ids)

    def _reserve(self, size: int) -> None:
        if size <= len(self.lengths):
            return
        capacity = max(size, 2 * len(self.lengths), 256)
        grow = capacity - len(self.lengths)
        self.lengths = np.concatenate([self.lengths, np.zeros(grow)])
        self.counts = np.vstack([self.counts, np.zeros((grow, len(self.terms)))])
        self.known = np.vstack([self.known, np.zeros((grow, len(self.terms)), dtype=bool)])

    def add(self, postings: Sequence[tuple[str, str, int, int]]) -> None:
        """Add (document, term, count, length) postings."""
        rows, ids, columns = self.rows, self.ids, self.columns
        places: list[int] = []
        lengths: list[int] = []
        at: list[int] = []
        where: list[int] = []
        counts: list[int] = []
        for document_id, term, count, length in postings:
            row = rows.get(document_id)
            if row is None:
                row = rows[document_id] = len(ids)
                ids.append(document_id)
                places.append(row)
                lengths.append(length)
            column = columns.get(term)
            if column is not None:
                at.append(row)
                where.append(column)
                counts.append(count)
        self._reserve(len(ids))
        if places:
            self.lengths[places] = lengths
        if at:
            self.counts[at, where] = counts
            self.known[at, where] = True

    def settle(self, document_ids: Iterable[str], terms: Iterable[str]) -> None:
        """Mark the counts of these documents' terms as read (absent ones are 0)."""
        rows = [self.rows[document_id] for document_id in document_ids]
        for term in terms:
            self.known[rows, self.columns[term]] = True

    def scores(self, stats: CollectionStats) -> np.ndarray:
        """Each document's score from the counts known (float32, query order)."""
        size = len(self.ids)
        lengths = self.lengths[:size]
        total = np.zeros(size, dtype=np.float32)
        for column, term in enumerate(self.terms):
            total += term_scores(
                stats.idf(term), self.counts[:size, column], lengths, stats.average_length
            )
        return total


def _kth(scores: np.ndarray, k: int) -> float:
    if len(scores) < k:
        return 0.0
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


class _TermCursor:
    """A term's postings read strongest first (most occurrences, then shortest document,
    then newest), a block at a time, with a ceiling on what any posting not read yet can
    add to a document's score."""

    def __init__(self, term: str, idf: float) -> None:
        self.term = term
        self.idf = idf
        self.read = 0
        self.last: tuple[int, int, int] | None = None
        self.done = False

    def ceiling(self, average_length: float) -> float:
        if self.done:
            return 0.0
        if self.last is None:
            return self.idf
        count, length, _ = self.last
        # A later posting has this count and a longer (or equal) document, or fewer
        # occurrences in a document at least as long as they are.
        same = saturation(count, length, average_length)
        fewer = saturation(count - 1, count - 1, average_length) if count > 1 else 0.0
        return self.idf * max(same, fewer)

    def read_block(
        self, corpora: Corpora, eligible: Eligible, size: int
    ) -> list[tuple[str, str, int, int]]:
        condition, params = eligible.sql()
        after = ""
        if self.last is not None:
            count, length, posting_id = self.last
            after = (
                " AND (count < %s OR (count = %s AND (length > %s OR (length = %s AND id < %s))))"
            )
            params = [*params, count, count, length, length, posting_id]
        rows = _fetch(
            f"SELECT document_id, count, length, id FROM {_table(KeywordPosting)} "
            f"WHERE corpus_id IN ({_placeholders(corpora.ids)}) AND term = %s"
            f"{condition}{after} ORDER BY count DESC, length ASC, id DESC LIMIT %s",
            [*corpora.ids, self.term, *params, size],
        )
        self.read += len(rows)
        if len(rows) < size:
            self.done = True
        if rows:
            last = rows[-1]
            self.last = (int(last[1]), int(last[2]), int(last[3]))
        return [(row[0], self.term, int(row[1]), int(row[2])) for row in rows]


def _read_counts(
    corpora: Corpora, terms: Sequence[str], document_ids: Sequence[str]
) -> list[tuple[str, str, int, int]]:
    """(document, term, count, length) of these documents' postings of ``terms``."""
    rows: list[tuple[str, str, int, int]] = []
    corpus_ids = set(corpora.ids)
    for start in range(0, len(document_ids), ID_CHUNK):
        chunk = document_ids[start : start + ID_CHUNK]
        # The corpus is checked here, not in SQL: with it in the WHERE clause SQLite
        # walks the terms' whole postings instead of each document's few.
        rows.extend(
            (row[0], row[1], int(row[2]), int(row[3]))
            for row in _fetch(
                f"SELECT document_id, term, count, length, corpus_id "
                f"FROM {_table(KeywordPosting)} "
                f"WHERE document_id IN ({_placeholders(chunk)}) "
                f"AND term IN ({_placeholders(terms)})",
                [*chunk, *terms],
            )
            if row[4] in corpus_ids
        )
    return rows


def _view_statistics(views: Sequence[CorpusView], terms: Sequence[str]) -> CollectionStats:
    """``index_statistics`` of the cached corpora, from their postings."""
    documents = sum(view.documents for view in views)
    tokens = sum(view.tokens for view in views)
    frequencies: dict[str, int] = {}
    for term in terms:
        held = sum(len(view.terms[term][0]) for view in views if term in view.terms)
        if held:
            frequencies[term] = held
    average = tokens / documents if documents and tokens else 1.0
    return CollectionStats(documents, average, frequencies)


def _rank_views(
    views: Sequence[CorpusView], terms: Sequence[str], *, wanted: int, eligible: Eligible
) -> list[tuple[str, float]]:
    """``rank_documents`` over cached corpora: every posting of the terms is in memory, so
    every document holding one is scored (no budget, exact), with the same arithmetic."""
    stats = _view_statistics(views, terms)
    present = [term for term in terms if stats.frequencies.get(term)]
    if not present:
        return []
    offsets: list[int] = []
    size = 0
    for view in views:
        offsets.append(size)
        size += len(view.lengths)
    lengths = np.concatenate([view.lengths for view in views])
    allowed = np.concatenate([view.alive for view in views])
    if eligible.before_seq is not None:
        seqs = np.concatenate([view.seqs for view in views])
        with np.errstate(invalid="ignore"):
            allowed &= seqs < eligible.before_seq
    for excluded in eligible.excluded:
        for view, offset in zip(views, offsets, strict=True):
            slot = view.slots.get(excluded)
            if slot is not None and slot < len(view.lengths):
                allowed[offset + slot] = False
    total = np.zeros(size, dtype=np.float32)
    touched = np.zeros(size, dtype=bool)
    average = stats.average_length
    for term in present:
        idf = stats.idf(term)
        for view, offset in zip(views, offsets, strict=True):
            held = view.terms.get(term)
            if held is None:
                continue
            slots = held[0] + offset
            keep = allowed[slots]
            slots, counts = slots[keep], held[1][keep]
            total[slots] += term_scores(idf, counts, lengths[slots], average)
            touched[slots] = True
    candidates = np.flatnonzero(touched)
    if not len(candidates):
        return []
    scores = total[candidates]
    if len(candidates) > wanted:
        candidates = candidates[scores >= _kth(scores, wanted)]
    starts = np.array(offsets)

    def document_id(at: int) -> str:
        n = int(np.searchsorted(starts, at, side="right")) - 1
        return views[n].ids[at - offsets[n]]

    keyed = [(-float(total[at]), document_id(at), float(total[at])) for at in candidates.tolist()]
    return [(ident, score) for _, ident, score in heapq.nsmallest(wanted, keyed)]


def _score_views(
    views: Sequence[CorpusView], terms: Sequence[str], document_ids: Sequence[str]
) -> dict[str, float]:
    """``score_documents`` over cached corpora."""
    stats = _view_statistics(views, terms)
    present = [term for term in terms if stats.frequencies.get(term)]
    found = _Candidates(present)
    postings: list[tuple[str, str, int, int]] = []
    for view in views:
        wanted = {
            slot: document_id
            for document_id in document_ids
            if (slot := view.slots.get(document_id)) is not None
            and slot < len(view.lengths)
            and view.alive[slot]
        }
        if not wanted:
            continue
        postings.extend(
            (document_id, EMPTY_TERM, 0, int(view.lengths[slot]))
            for slot, document_id in wanted.items()
        )
        asked = np.array(list(wanted), dtype=np.int64)
        for term in present:
            held = view.terms.get(term)
            if held is None:
                continue
            at = np.flatnonzero(np.isin(held[0], asked))
            postings.extend(
                (wanted[int(held[0][n])], term, int(held[1][n]), int(view.lengths[held[0][n]]))
                for n in at.tolist()
            )
    found.add(postings)
    scores = found.scores(stats).tolist()
    return {document_id: float(score) for document_id, score in zip(found.ids, scores, strict=True)}


def rank_documents(
    corpora: Corpora,
    terms: Sequence[str],
    *,
    limit: int,
    budget: int,
    eligible: Eligible = Eligible(),
    take: int | None = None,
) -> list[tuple[str, float]]:
    """The best documents of these corpora for ``terms`` by BM25, best first (ties to the
    smaller id), at most ``take`` (default ``limit``).

    ``eligible``: which documents may be hits. ``budget``: the most postings read before
    the candidates' own counts.
    """
    terms = index_terms(terms)
    if not corpora.ids or not terms:
        return []
    wanted = max(take if take is not None else limit, 1)
    views = corpus_views(corpora.rows, terms)
    if views is not None:
        return _rank_views(views, terms, wanted=wanted, eligible=eligible)
    stats = index_statistics(corpora, terms)
    present = [term for term in terms if stats.frequencies.get(term)]
    if not present:
        return []
    average = stats.average_length
    cursors = [_TermCursor(term, stats.idf(term)) for term in present]
    found = _Candidates(present)
    remaining = budget
    while remaining > 0:
        open_cursors = [cursor for cursor in cursors if not cursor.done]
        if not open_cursors:
            break
        # A document not read yet scores at most the sum of the ceilings.
        if _kth(found.scores(stats), wanted) >= sum(c.ceiling(average) for c in open_cursors):
            break
        # The term whose ceiling is highest, a block twice as long as the last.
        cursor = max(open_cursors, key=lambda c: (c.ceiling(average), c.term))
        rows = cursor.read_block(corpora, eligible, min(max(FIRST_BLOCK, cursor.read), remaining))
        found.add(rows)
        remaining -= len(rows)
    # Each candidate may still hold terms it was not read with: at most their ceilings.
    # Those that could reach the ``wanted``-th score get their counts read.
    exact: set[str] = set()
    while True:
        open_cursors = [cursor for cursor in cursors if not cursor.done]
        if not open_cursors or not len(found):
            break
        scores = found.scores(stats)
        floor = _kth(scores, wanted)
        unknown = ~found.known[: len(found)]
        ceilings = np.zeros(len(found), dtype=np.float64)
        for cursor in open_cursors:
            column = found.columns[cursor.term]
            ceilings += unknown[:, column] * cursor.ceiling(average)
        uncertain = [
            n
            for n in np.flatnonzero(scores.astype(np.float64) + ceilings >= floor).tolist()
            if found.ids[n] not in exact
        ]
        if not uncertain:
            break
        if len(uncertain) > LOOKUP_LIMIT and remaining > 0:
            # Reading on in a term's postings lowers its ceiling for all of them, cheaper
            # than looking each one up: the term most of them may hold, by its ceiling.
            cursor = max(
                open_cursors,
                key=lambda c: (
                    int(unknown[uncertain, found.columns[c.term]].sum()) * c.ceiling(average),
                    c.term,
                ),
            )
            block = cursor.read_block(
                corpora, eligible, min(max(FIRST_BLOCK, cursor.read), remaining)
            )
            found.add(block)
            remaining -= len(block)
            continue
        need = [found.ids[n] for n in uncertain]
        open_terms = [cursor.term for cursor in open_cursors]
        found.add(_read_counts(corpora, open_terms, need))
        found.settle(need, open_terms)
        exact.update(need)
    if not len(found):
        return []
    scores = found.scores(stats)
    ids = found.ids
    # The best by score (numpy), then ties at the cut to the smaller id (Python).
    if len(ids) > wanted:
        floor = _kth(scores, wanted)
        considered = np.flatnonzero(scores >= floor).tolist()
    else:
        considered = list(range(len(ids)))
    best = heapq.nsmallest(wanted, considered, key=lambda n: (-scores[n], ids[n]))
    return [(ids[n], float(scores[n])) for n in best]


def score_documents(
    corpora: Corpora, terms: Sequence[str], document_ids: Sequence[str]
) -> dict[str, float]:
    """The BM25 score of each of these documents (indexed in these corpora) for
    ``terms``; documents holding none of the terms score 0, unknown ones are left out."""
    terms = index_terms(terms)
    if not corpora.ids or not document_ids:
        return {}
    views = corpus_views(corpora.rows, terms)
    if views is not None:
        return _score_views(views, terms, document_ids)
    stats = index_statistics(corpora, terms)
    present = [term for term in terms if stats.frequencies.get(term)]
    found = _Candidates(present)
    found.add(_read_counts(corpora, [EMPTY_TERM, *present], list(document_ids)))
    scores = found.scores(stats).tolist()
    return {document_id: float(score) for document_id, score in zip(found.ids, scores, strict=True)}
