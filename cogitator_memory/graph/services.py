"""``MemoryGraph``: the rules of the knowledge graph, over ``GraphNode``, ``GraphEdge`` and
``GraphEvidence``.

The rules live in one module each, joined here into the one class callers use:

- ``graph.writing``: upserts of nodes and edges, their changes, nodes of items' subjects;
- ``graph.merging``: merging nodes that name one thing;
- ``graph.transitions``: a reviewer's decisions;
- ``graph.traversal``: neighbourhoods and shortest paths (one recursive query each);
- ``graph.selectors``: the reads by id and the scoped querysets.

Forgetting what stands on entries is ``graph.forgetting`` (a registered dependent)."""

from __future__ import annotations

from cogitator_memory.graph.merging import GraphMerging
from cogitator_memory.graph.selectors import GraphReads
from cogitator_memory.graph.transitions import GraphTransitions
from cogitator_memory.graph.traversal import GraphPath, GraphTraversal, Neighbourhood
from cogitator_memory.graph.writing import GraphWriting

__all__ = ["GraphPath", "MemoryGraph", "Neighbourhood"]


class MemoryGraph(GraphWriting, GraphMerging, GraphTransitions, GraphTraversal, GraphReads):
    """The rules of the knowledge graph. ``clock`` gives "now" (tests pass their own)."""
