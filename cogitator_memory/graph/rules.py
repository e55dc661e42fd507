"""What every part of ``MemoryGraph`` shares: the clock, the lock of an agent's graph
writes, the exact scope's digest and the lookups of nodes and edges by id."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.db import connections, router
from django.utils import timezone

from cogitator_memory.exceptions import GraphEdgeNotFound, GraphNodeNotFound
from cogitator_memory.files.models import scope_key
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphNode
from cogitator_memory.graph.querysets import GraphEdgeQuerySet, GraphNodeQuerySet
from cogitator_memory.items.write_sql import AGENT_LOCK
from cogitator_memory.jsondata import storable_text

__all__ = ["GraphRules", "graph_lock_key", "scope_key_of"]


def graph_lock_key(agent_id: str) -> str:
    """The key of the advisory lock that serializes one agent's graph writes."""
    return f"cogitator_memory.graph:{agent_id}"


def scope_key_of(scope: MemoryScope) -> str:
    """The digest of an exact scope (the one files use)."""
    return scope_key(scope.agent_id, scope.user_id, scope.project_id, scope.thread_id)


class GraphRules:
    """``clock`` gives "now" (tests pass their own)."""

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        self.clock = clock or timezone.now

    # --- locks ------------------------------------------------------------------------

    @staticmethod
    def lock_agents(agent_ids: Iterable[str]) -> None:
        """Serialize with the graph writes of these agents until the transaction ends (in
        one order, so two lockers never wait on each other). On SQLite the IMMEDIATE
        transaction holds the database's write lock already."""
        connection = connections[router.db_for_write(GraphNode)]
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            for agent_id in sorted(set(agent_ids)):
                cursor.execute(AGENT_LOCK, [graph_lock_key(agent_id)])

    # --- lookups ----------------------------------------------------------------------

    @staticmethod
    def _visible_nodes(grants: Grants | None) -> GraphNodeQuerySet:
        nodes = GraphNode.objects.all()
        return nodes if grants is None else nodes.visible_to(grants)

    @staticmethod
    def _visible_edges(grants: Grants | None) -> GraphEdgeQuerySet:
        edges = GraphEdge.objects.all()
        return edges if grants is None else edges.visible_to(grants)

    def _node(self, node: Any, grants: Grants | None, *, lock: bool = False) -> GraphNode:
        """The node of this id (or this node, read again) the caller may see. Raises
        ``GraphNodeNotFound``."""
        node_id = node.pk if isinstance(node, GraphNode) else node
        if not storable_text(node_id) or len(node_id) > 64:
            raise GraphNodeNotFound(str(node_id))
        nodes = self._visible_nodes(grants)
        if lock:
            nodes = nodes.select_for_update()
        found = nodes.filter(pk=node_id).first()
        if found is None:
            raise GraphNodeNotFound(node_id)
        return found

    def _edge(self, edge: Any, grants: Grants | None, *, lock: bool = False) -> GraphEdge:
        """The edge of this id the caller may see. Raises ``GraphEdgeNotFound``."""
        edge_id = edge.pk if isinstance(edge, GraphEdge) else edge
        if not storable_text(edge_id) or len(edge_id) > 64:
            raise GraphEdgeNotFound(str(edge_id))
        edges = self._visible_edges(grants)
        if lock:
            edges = edges.select_for_update()
        found = edges.filter(pk=edge_id).first()
        if found is None:
            raise GraphEdgeNotFound(edge_id)
        return found
