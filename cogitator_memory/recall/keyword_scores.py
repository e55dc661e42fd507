"""BM25 over texts held in memory: the turns of a history, the items of a run.

Scored with keyword search's arithmetic (``search/bm25_formula.py``) and tokens
(``keywords/tokenizer.py``), with the statistics of the documents given. It holds no state
past its documents and touches no database.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogitator_memory.search.bm25_formula import CollectionStats, Document, bm25_scores

__all__ = ["InMemoryBM25"]


class InMemoryBM25:
    """BM25 over documents in memory.

    ``documents``: (id, tokens) pairs; statistics are those of all of them.
    """

    def __init__(self, documents: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.ids = [doc_id for doc_id, _ in documents]
        self.tokens = [tokens for _, tokens in documents]
        self.lengths = [len(tokens) for tokens in self.tokens]
        self.token_sets = [frozenset(tokens) for tokens in self.tokens]

    def scores(self, terms: Sequence[str]) -> dict[str, float]:
        """The BM25 score of each document holding a term, by id."""
        terms = list(dict.fromkeys(terms))
        holding = [n for n, held in enumerate(self.token_sets) if not held.isdisjoint(terms)]
        if not holding or not self.ids:
            return {}
        frequencies = {term: sum(1 for held in self.token_sets if term in held) for term in terms}
        stats = CollectionStats(
            documents=len(self.ids),
            average_length=max(sum(self.lengths) / len(self.ids), 1.0),
            frequencies=frequencies,
        )
        documents = [Document.of(self.tokens[n], terms) for n in holding]
        values = bm25_scores(terms, documents, stats)
        return {
            self.ids[n]: float(score)
            for n, score in zip(holding, values.tolist(), strict=True)
            if score > 0
        }

    def ranked(self, terms: Sequence[str], *, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` best documents for ``terms``, best first (ties by id)."""
        scores = self.scores(terms)
        return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]
