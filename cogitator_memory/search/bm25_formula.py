"""BM25's arithmetic, written once: idf, term-frequency saturation and length normalization.

Every keyword ranking of the app scores with these functions: keyword search from the
keyword index and by its scan (``search/keyword_index.py``, ``search/bm25.py``), the BM25
of a thread's entries (``search/entry_keywords.py``) and recall's BM25 over texts in memory
(``recall/keyword_scores.py``). The variant is bm25s's ``"lucene"`` one, with its defaults
(k1 1.5, b 0.75), and the numbers are computed as bm25s computes them: the idf rounded to
float32, a term's part of a score ``idf x saturation`` stored as float32, the parts summed
in float32 in query order. A ranking therefore equals bm25s's over the same documents.

For a document of ``length`` tokens holding a term ``count`` times, in a collection of
``documents`` documents of ``average_length`` tokens of which ``holders`` hold the term::

    idf        = log(1 + (documents - holders + 0.5) / (holders + 0.5))
    saturation = count / (count + K1 x (1 - B + B x length / average_length))
    score      = sum over the query's terms of idf x saturation
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "K1",
    "B",
    "CollectionStats",
    "Document",
    "bm25_scores",
    "idf",
    "saturation",
    "term_scores",
]

# bm25s's defaults, which keyword search has always used: how fast repeating a term stops
# adding to a score (K1), and how much a longer document is discounted (B).
K1 = 1.5
B = 0.75


def idf(holders: int, documents: int) -> float:
    """Lucene's idf of a term ``holders`` of ``documents`` documents hold, as bm25s keeps
    it (float32); 0 for a term no document holds."""
    if not holders:
        return 0.0
    weight = math.log(1 + (documents - holders + 0.5) / (holders + 0.5))
    return float(np.float32(weight))


def saturation(count: float, length: float, average_length: float) -> float:
    """A term's frequency part of BM25 for one document (below 1): ``count`` occurrences
    in a document of ``length`` tokens, the collection's documents ``average_length``."""
    return count / (count + K1 * ((1 - B) + B * length / average_length))


def term_scores(
    weight: float, counts: np.ndarray, lengths: np.ndarray, average_length: float
) -> np.ndarray:
    """One term's BM25 part of each document (``counts`` of the term, ``lengths`` in
    tokens): ``saturation`` in float64, times the term's float32 idf ``weight``, stored as
    float32, zero where ``counts`` is."""
    tfc = counts / (K1 * ((1 - B) + B * lengths / average_length) + counts)
    scores: np.ndarray = (np.float64(weight) * tfc).astype(np.float32)
    return scores


@dataclass(frozen=True)
class CollectionStats:
    """What BM25 needs to know of the whole collection searched: its documents, their
    average length in tokens, and per term the documents holding it."""

    documents: int
    average_length: float
    frequencies: Mapping[str, int]

    def idf(self, term: str) -> float:
        """The idf of ``term`` in this collection."""
        return idf(self.frequencies.get(term, 0), self.documents)


@dataclass(frozen=True)
class Document:
    """What BM25 reads of a document for a query: its length in tokens, and how often it
    holds each query word it holds."""

    length: int
    counts: Mapping[str, int]

    @classmethod
    def of(cls, tokens: Sequence[str], terms: Iterable[str]) -> Document:
        counted = Counter(tokens)
        return cls(len(tokens), {term: counted[term] for term in terms if term in counted})


def bm25_scores(
    terms: Sequence[str], documents: Sequence[Document], stats: CollectionStats
) -> np.ndarray:
    """The BM25 score of each of ``documents`` for the query ``terms`` (float32), with the
    statistics of the collection they belong to.

    The documents scored belong to the collection, so it never counts fewer documents than
    are given, nor fewer holders of a term than hold it among them: a row written since
    the statistics were read may hold a word more often than they say.
    """
    query = list(dict.fromkeys(terms))
    total = np.zeros(len(documents), dtype=np.float32)
    if not documents:
        return total
    size = max(stats.documents, len(documents))
    lengths = np.array([document.length for document in documents], dtype=np.float64)
    for term in query:
        counts = np.array([document.counts.get(term, 0) for document in documents], dtype=float)
        held = int(np.count_nonzero(counts))
        if not held:
            continue
        weight = idf(max(stats.frequencies.get(term, 0), held), size)
        total += term_scores(weight, counts, lengths, stats.average_length)
    return total
