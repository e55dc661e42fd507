"""The knowledge graph's part of the ``item_graph`` walk: the active nodes and edges a run
of a scope sees, as links of the walk's graph, and the nodes the turn names, as seeds.

A node links to the entity it mirrors (``GraphNode.entity``, or the entity of its name
among the items' subjects), so the walk steps from items to their subject, along the
graph's edges, and back to the items of another subject: items two relations away from
what the turn names get rank. Two queries, each capped, whatever the graph's size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from cogitator_memory.graph.names_in_text import named_in
from cogitator_memory.items.statements import entity_key

if TYPE_CHECKING:
    from cogitator_memory.grants import Grants, MemoryScope

__all__ = [
    "MAX_WALK_EDGES",
    "MAX_WALK_NODES",
    "GraphLinks",
    "graph_links",
    "node_key",
    "subject_keys",
]

# The most nodes and edges of the graph one walk reads (the newest nodes, the heaviest
# edges): a PageRank over a few thousand links costs a few milliseconds, and a graph past
# these bounds adds rows to read, never to walk.
MAX_WALK_NODES = 2000
MAX_WALK_EDGES = 4000


def node_key(node_id: str) -> str:
    return f"gnode:{node_id}"


@dataclass(frozen=True)
class GraphLinks:
    """The links the graph adds to the walk, and the node keys the turn names."""

    edges: list[tuple[str, str]] = field(default_factory=list)
    named: list[str] = field(default_factory=list)


def graph_links(
    scope: MemoryScope,
    *,
    input: str,
    as_of: datetime,
    grants: Grants | None,
    entities: Mapping[str, str],
) -> GraphLinks:
    """The links of the active nodes and edges a run of ``scope`` sees (within
    ``grants``) that held at ``as_of``; ``entities`` maps the names' keys of the items'
    subjects to their ids (a node of no entity links to the subject of its name)."""
    nodes = GraphNode.objects.seen_from(scope).filter(status=GraphStatus.ACTIVE).valid_at(as_of)
    edges = GraphEdge.objects.seen_from(scope).filter(status=GraphStatus.ACTIVE).valid_at(as_of)
    if grants is not None:
        nodes, edges = nodes.visible_to(grants), edges.visible_to(grants)
    rows = list(
        nodes.order_by("-updated_at", "pk").values_list(
            "pk", "entity_id", "key", "name", "aliases"
        )[:MAX_WALK_NODES]
    )
    if not rows:
        return GraphLinks()
    links: list[tuple[str, str]] = []
    for node_id, entity_id, key, _name, _aliases in rows:
        mirrored = entity_id or entities.get(key)
        if mirrored:
            links.append((node_key(node_id), f"entity:{mirrored}"))
    known = {row[0] for row in rows}
    pairs = edges.order_by("-weight", "pk").values_list("source_id", "target_id")[:MAX_WALK_EDGES]
    for source_id, target_id in pairs:
        if source_id in known and target_id in known:
            links.append((node_key(source_id), node_key(target_id)))
    named = named_in(input, [(node_id, name, aliases) for node_id, _e, _k, name, aliases in rows])
    return GraphLinks(links, [node_key(node_id) for node_id in named])


def subject_keys(subjects: Mapping[str, str]) -> dict[str, str]:
    """The key of each subject's name (``entity_key``, the rule of nodes' keys) -> its id."""
    return {entity_key(name): entity_id for entity_id, name in subjects.items()}
