"""A personalized PageRank over the graph of memory items and entities (the ``item_graph``
channel's walk).

This function holds no state and touches no database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import networkx as nx  # type: ignore[import-untyped]

__all__ = ["PAGERANK_ALPHA", "personalized_pagerank"]

# The damping of the PageRank walk: the chance of following an edge rather than jumping
# back to a seed. Low, so the walk stays near what the turn named.
PAGERANK_ALPHA = 0.5


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
