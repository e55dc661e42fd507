"""The knowledge graph as a context builder's graph context (``MemoryGraphContext``).

A turn gets the active nodes it names (a node's name or an alias as words of the input,
case and punctuation aside) and what lies within ``GraphContextOptions.depth`` edges of
them, walked by ``MemoryGraph.neighbourhood`` (one recursive query a named node), as lines:
the named nodes first, then by distance; then the edges among the nodes sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from cogitator_memory.context.seams import GraphContext, GraphLine
from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.context_options import GraphContextOptions
from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from cogitator_memory.graph.names_in_text import named_in
from cogitator_memory.graph.services import MemoryGraph

if TYPE_CHECKING:
    from cogitator_memory.grants import Grants

__all__ = ["MemoryGraphContext", "edge_line", "node_line"]

# The nodes of a scope read to find those a turn names, the newest first: names are
# matched in process, so this bounds the cost of a turn on a large graph.
NAMED_SCAN = 5000


def node_line(node: GraphNode) -> str:
    """``Ana (person)``, with the other names: ``Ana (person; also Annie)``."""
    names = [alias for alias in node.aliases or [] if isinstance(alias, str)]
    also = f"; also {', '.join(names)}" if names else ""
    return f"{node.name} ({node.type.replace('_', ' ')}{also})"


def edge_line(edge: GraphEdge, names: dict[str, str]) -> str:
    """``Ana lives in Lisbon``."""
    relation = edge.relation.replace("_", " ")
    return f"{names[edge.source_id]} {relation} {names[edge.target_id]}"


class MemoryGraphContext:
    """The built-in graph context source (``context.seams.GraphContextSource``) over
    ``MemoryGraph``, within the run's scope and the caller's grants."""

    def __init__(self, graph: MemoryGraph | None = None) -> None:
        self.graph = graph or MemoryGraph()

    def graph_context(
        self,
        *,
        agent_id: str,
        user_id: str | None,
        input: str | None,
        as_of: datetime,
        grants: Grants | None,
        thread_id: str | None = None,
        options: GraphContextOptions | None = None,
    ) -> GraphContext:
        """The nodes the input names and their neighbourhoods, as lines (none without an
        input). Raises what the database raises."""
        options = options or GraphContextOptions()
        if not input:
            return GraphContext()
        scope = MemoryScope(agent_id, user_id=user_id, thread_id=thread_id)
        candidates = (
            self.graph.nodes(scope=scope, grants=grants, status=GraphStatus.ACTIVE)
            .valid_at(as_of)
            .order_by("-updated_at", "pk")
            .values_list("pk", "name", "aliases")[:NAMED_SCAN]
        )
        named = named_in(input, list(candidates))[: options.max_nodes]
        depth_of: dict[str, int] = dict.fromkeys(named, 0)
        found: dict[str, GraphNode] = {}
        edges: dict[str, GraphEdge] = {}
        for node_id in named:
            reach = self.graph.neighbourhood(
                node_id,
                depth=options.depth,
                max_nodes=options.max_nodes,
                relations=options.relations,
                as_of=as_of,
                grants=grants,
            )
            for node in reach.nodes:
                found[node.pk] = node
                hops = reach.depth_of[node.pk]
                depth_of[node.pk] = min(depth_of.get(node.pk, hops), hops)
            edges.update((edge.pk, edge) for edge in reach.edges)
        first = {node_id: place for place, node_id in enumerate(named)}

        def node_order(node: GraphNode) -> tuple[bool, int, int, str, str]:
            named_first = node.pk not in first
            return (
                named_first,
                first.get(node.pk, 0),
                depth_of[node.pk],
                node.name.casefold(),
                node.pk,
            )

        ordered = sorted(found.values(), key=node_order)[: options.max_nodes]
        names = {node.pk: node.name for node in ordered}

        def edge_order(edge: GraphEdge) -> tuple[int, str, str, str, str]:
            reach = max(depth_of[edge.source_id], depth_of[edge.target_id])
            source, target = names[edge.source_id], names[edge.target_id]
            return (reach, source.casefold(), edge.relation, target.casefold(), edge.pk)

        among = [e for e in edges.values() if e.source_id in names and e.target_id in names]
        return GraphContext(
            nodes=[GraphLine(node.pk, node_line(node), node) for node in ordered],
            edges=[
                GraphLine(edge.pk, edge_line(edge, names), edge)
                for edge in sorted(among, key=edge_order)
            ],
        )
