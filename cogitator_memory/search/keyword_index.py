"""BM25 read from the keyword index (``keywords/models.py``): statistics and candidates
come from postings, never from scanning text.

``rank_documents`` ranks the documents of some corpora for a query's terms:

1. Statistics of every document of those corpora: their number and tokens (summed over
   the corpora's rows), and per term the documents holding it (summed over
   ``KeywordTerm``), so idf and length normalization are those of BM25 over the whole
   collection, exactly.
2. Candidates, rarest term first: the postings of the term (all of them while they fit
   the candidate budget), then each new candidate's counts of the terms not read yet.
3. After each term, a document that is not yet a candidate holds none of the terms read,
   so its score is below the sum of the idf of the terms left (each term's frequency
   part is below 1, as the old scan's "rest" bound). Once the ``limit``-th score reaches
   that bound, no other document can enter the hits and the ranking is BM25's, exactly.
4. A term held by more documents than the budget left is read strongest first (most
   occurrences, then shortest documents, then newest): the only case where a hit can be
   missed.

Scores are computed as bm25s computes them (Lucene's idf, k1 1.5, b 0.75, float32 sums
in query order), so a ranking equals bm25s's over the same documents. Every step is a
portable query: SQLite and PostgreSQL give the same hits and scores.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Q, Sum

from cogitator_memory.keywords.models import (
    MAX_TERM_LENGTH,
    KeywordCorpus,
    KeywordPosting,
    KeywordTerm,
)

__all__ = ["IndexStatistics", "index_statistics", "rank_documents", "score_documents"]

# bm25s's defaults, which keyword search has always used.
K1 = 1.5
B = 0.75
# Document ids per query when reading a set of candidates' postings.
ID_CHUNK = 500


def index_terms(terms: Sequence[str]) -> list[str]:
    """Query terms as the index keeps them (cut to its longest term), distinct."""
    return list(dict.fromkeys(term[:MAX_TERM_LENGTH] for term in terms if term))


@dataclass(frozen=True)
class IndexStatistics:
    """What BM25 needs to know of the whole collection searched."""

    documents: int
    average_length: float
    frequencies: dict[str, int]

    def idf(self, term: str) -> float:
        """Lucene's idf, as bm25s computes it (float32)."""
        held = self.frequencies.get(term, 0)
        if not held:
            return 0.0
        weight = math.log(1 + (self.documents - held + 0.5) / (held + 0.5))
        return float(np.float32(weight))


def index_statistics(corpus_ids: Sequence[int], terms: Sequence[str]) -> IndexStatistics:
    """The statistics of every document of these corpora, for these terms. Two queries on
    small tables."""
    totals = KeywordCorpus.objects.filter(pk__in=corpus_ids).aggregate(
        documents=Sum("documents"), tokens=Sum("total_length")
    )
    documents = int(totals["documents"] or 0)
    tokens = int(totals["tokens"] or 0)
    frequencies = {
        term: int(held)
        for term, held in KeywordTerm.objects.filter(corpus_id__in=corpus_ids, term__in=terms)
        .values("term")
        .annotate(held=Sum("documents"))
        .values_list("term", "held")
        if held
    }
    # bm25s divides by the mean length; a collection of empty documents scores nothing.
    average = tokens / documents if documents and tokens else 1.0
    return IndexStatistics(documents, average, frequencies)


@dataclass
class _Candidates:
    lengths: dict[str, int] = field(default_factory=dict)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def scores(self, terms: Sequence[str], stats: IndexStatistics) -> tuple[list[str], np.ndarray]:
        ids = list(self.lengths)
        lengths = np.fromiter((self.lengths[i] for i in ids), dtype=np.float64, count=len(ids))
        total = np.zeros(len(ids), dtype=np.float32)
        for term in terms:
            held = self.counts.get(term)
            if not held:
                continue
            tf = np.fromiter((held.get(i, 0) for i in ids), dtype=np.float64, count=len(ids))
            total += term_scores(stats.idf(term), tf, lengths, stats.average_length)
        return ids, total

    def add(self, document_id: str, length: int, term: str, count: int) -> None:
        self.lengths[document_id] = length
        self.counts.setdefault(term, {})[document_id] = count


def term_scores(
    idf: float, counts: np.ndarray, lengths: np.ndarray, average_length: float
) -> np.ndarray:
    """One term's BM25 part of each document, as bm25s computes it: the frequency part
    in float64, times the float32 idf, stored as float32 (zero where ``counts`` is)."""
    tfc = counts / (K1 * ((1 - B) + B * lengths / average_length) + counts)
    scores: np.ndarray = (np.float64(idf) * tfc).astype(np.float32)
    return scores


def _kth(scores: np.ndarray, k: int) -> float:
    if len(scores) < k:
        return 0.0
    return float(np.partition(scores, len(scores) - k)[len(scores) - k])


def rank_documents(
    corpus_ids: Sequence[int],
    terms: Sequence[str],
    *,
    limit: int,
    budget: int,
    eligible: Q | None = None,
    take: int | None = None,
) -> list[tuple[str, float]]:
    """The best documents of these corpora for ``terms`` by BM25, best first (ties to the
    smaller id), at most ``take`` (default ``limit``).

    ``eligible``: a condition on ``KeywordPosting`` a document must meet to be a hit
    (statistics still count every document). ``budget``: the most candidates scored.
    """
    terms = index_terms(terms)
    if not corpus_ids or not terms:
        return []
    stats = index_statistics(corpus_ids, terms)
    present = [term for term in terms if stats.frequencies.get(term)]
    if not present:
        return []
    by_rarity = sorted(present, key=lambda term: (stats.frequencies[term], term))
    postings = KeywordPosting.objects.filter(corpus_id__in=list(corpus_ids))
    if eligible is not None:
        postings = postings.filter(eligible)
    found = _Candidates()
    remaining = budget
    ids: list[str] = []
    scores = np.zeros(0, dtype=np.float32)
    for position, term in enumerate(by_rarity):
        if position:
            bound = sum(stats.idf(later) for later in by_rarity[position:])
            if _kth(scores, limit) >= bound:
                break
        if remaining <= 0:
            break
        rows = postings.filter(term=term).order_by("-count", "length", "-id")
        new: list[str] = []
        for document_id, count, length in rows.values_list("document_id", "count", "length")[
            :remaining
        ]:
            if document_id not in found.lengths:
                new.append(document_id)
            found.add(document_id, length, term, count)
        remaining -= len(new)
        later = by_rarity[position + 1 :]
        if new and later:
            # The new candidates' counts of the terms not read yet (of those read, they
            # hold none: they would have been read with them).
            for start in range(0, len(new), ID_CHUNK):
                chunk = new[start : start + ID_CHUNK]
                for document_id, other, count in KeywordPosting.objects.filter(
                    corpus_id__in=list(corpus_ids), document_id__in=chunk, term__in=later
                ).values_list("document_id", "term", "count"):
                    found.counts.setdefault(other, {})[document_id] = count
        ids, scores = found.scores(present, stats)
    if not ids:
        return []
    wanted = take if take is not None else limit
    best = heapq.nsmallest(wanted, range(len(ids)), key=lambda n: (-scores[n], ids[n]))
    return [(ids[n], float(scores[n])) for n in best]


def score_documents(
    corpus_ids: Sequence[int], terms: Sequence[str], document_ids: Sequence[str]
) -> dict[str, float]:
    """The BM25 score of each of these documents (indexed in these corpora) for
    ``terms``; documents holding none of the terms score 0, unknown ones are left out."""
    terms = index_terms(terms)
    if not corpus_ids or not document_ids:
        return {}
    stats = index_statistics(corpus_ids, terms)
    present = [term for term in terms if stats.frequencies.get(term)]
    found = _Candidates()
    wanted = ["", *present]
    for start in range(0, len(document_ids), ID_CHUNK):
        chunk = list(document_ids[start : start + ID_CHUNK])
        for document_id, term, count, length in KeywordPosting.objects.filter(
            corpus_id__in=list(corpus_ids), document_id__in=chunk, term__in=wanted
        ).values_list("document_id", "term", "count", "length"):
            found.add(document_id, length, term, count)
    ids, scores = found.scores(present, stats)
    return {
        document_id: float(score) for document_id, score in zip(ids, scores.tolist(), strict=True)
    }
