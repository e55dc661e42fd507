"""The pieces recall's channels are made of: BM25 over texts in memory, cosines against a
query vector with recall's thresholds, entities named in a turn, and a personalized
PageRank over the graph of memory items and entities.

``search/retriever.py`` runs the channels; these functions hold no state and touch no
database.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx  # type: ignore[import-untyped]
import numpy as np

from cogitator_memory.search.bm25 import CollectionStats, Document, bm25_scores

__all__ = [
    "VECTOR_FLOOR",
    "VECTOR_SHARE",
    "KeywordIndex",
    "NamedEntity",
    "cosines",
    "entities_named",
    "kept_by_thresholds",
    "mentions",
    "personalized_pagerank",
]

# A vector hit is kept at a cosine of at least VECTOR_FLOOR and at least VECTOR_SHARE of the
# best cosine of the search (the specification's Recall section).
VECTOR_FLOOR = 0.45
VECTOR_SHARE = 0.6
# The damping of the PageRank walk: the chance of following an edge rather than jumping
# back to a seed. Low, so the walk stays near what the turn named.
PAGERANK_ALPHA = 0.5


class KeywordIndex:
    """BM25 (bm25s's Lucene variant, the project's tokens) over documents in memory.

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


def cosines(query: np.ndarray, vectors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The cosine of each vector with ``query`` (vectors of another size are left out)."""
    norm = float(np.linalg.norm(query)) or 1.0
    found: dict[str, float] = {}
    for key, vector in vectors.items():
        if vector.shape != query.shape:
            continue
        length = float(np.linalg.norm(vector)) or 1.0
        found[key] = float(vector @ query) / (length * norm)
    return found


def kept_by_thresholds(
    scores: Mapping[str, float],
    *,
    floor: float = VECTOR_FLOOR,
    share: float = VECTOR_SHARE,
    limit: int,
) -> list[tuple[str, float]]:
    """The vector hits recall keeps, best first: a cosine of ``floor`` or more and
    ``share`` of the best or more, at most ``limit``."""
    if not scores:
        return []
    best = max(scores.values())
    cut = max(floor, share * best)
    kept = [(key, score) for key, score in scores.items() if score >= cut]
    return sorted(kept, key=lambda pair: (-pair[1], pair[0]))[:limit]


@dataclass(frozen=True)
class NamedEntity:
    """An entity of memory whose name (or an alias) a turn holds as words."""

    id: str
    name: str
    pattern: re.Pattern[str]


def _name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    words = sorted({name.strip() for name in names if name and name.strip()}, key=len)
    if not words:
        return None
    alternatives = "|".join(re.escape(word) for word in reversed(words))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def entities_named(
    text: str, entities: Iterable[tuple[str, str, Sequence[str]]]
) -> list[NamedEntity]:
    """The entities (id, name, aliases) whose name or an alias ``text`` holds as whole
    words, case aside, in the order given."""
    found = []
    for entity_id, name, aliases in entities:
        pattern = _name_pattern([name, *[alias for alias in aliases if isinstance(alias, str)]])
        if pattern is not None and pattern.search(text):
            found.append(NamedEntity(entity_id, name, pattern))
    return found


def mentions(text: str, named: Sequence[NamedEntity]) -> int:
    """How many of the ``named`` entities ``text`` names."""
    return sum(1 for entity in named if entity.pattern.search(text))


def personalized_pagerank(
    edges: Iterable[tuple[str, str]],
    seeds: Mapping[str, float],
    *,
    alpha: float = PAGERANK_ALPHA,
) -> dict[str, float]:
    """PageRank of the nodes of the undirected graph ``edges`` with jumps back to
    ``seeds`` (node -> weight); nodes the walk never reaches are left out, and so are
    seeds not in the graph."""
    graph = nx.Graph()
    graph.add_edges_from(edges)
    personalization = {node: weight for node, weight in seeds.items() if node in graph}
    if not personalization:
        return {}
    ranks: dict[str, float] = nx.pagerank(
        graph, alpha=alpha, personalization=personalization, max_iter=100, tol=1e-8
    )
    return {node: score for node, score in ranks.items() if score > 0}
