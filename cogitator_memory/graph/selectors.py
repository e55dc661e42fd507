"""The reads of the graph by id and as scoped querysets (``GraphReads``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph.inputs import Errors, node_key
from cogitator_memory.graph.models import GraphEdge, GraphNode
from cogitator_memory.graph.querysets import GraphEdgeQuerySet, GraphNodeQuerySet
from cogitator_memory.graph.rules import GraphRules

__all__ = ["GraphReads"]


def _statuses(errors: Errors, status: str | Iterable[str] | None) -> list[str] | None:
    return None if status is None else errors.statuses(status)


class GraphReads(GraphRules):
    def get_node(self, node_id: str, *, grants: Grants | None = None) -> GraphNode:
        """The node of this id. Raises ``GraphNodeNotFound`` (also for a node the caller
        may not see)."""
        return self._node(node_id, grants)

    def get_edge(self, edge_id: str, *, grants: Grants | None = None) -> GraphEdge:
        """The edge of this id. Raises ``GraphEdgeNotFound``."""
        return self._edge(edge_id, grants)

    def nodes(
        self,
        *,
        scope: MemoryScope | None = None,
        grants: Grants | None = None,
        type: str | None = None,
        status: str | Iterable[str] | None = None,
        search: str | None = None,
    ) -> GraphNodeQuerySet:
        """The nodes the caller may see (those a run of ``scope`` sees, when given), of
        the ``type`` and statuses asked for, whose name holds ``search`` (case and
        spacing aside), by name. Raises ``InvalidGraphInput``."""
        errors = Errors()
        kind = errors.type(type) if type is not None else None
        statuses = _statuses(errors, status)
        words = errors.text("search", search, 255) if search is not None else None
        if scope is not None and not isinstance(scope, MemoryScope):
            errors.add("scope", "A scope is a MemoryScope.")
        errors.raise_any()
        nodes = self._visible_nodes(grants)
        if scope is not None:
            nodes = nodes.seen_from(scope)
        if kind is not None:
            nodes = nodes.filter(type=kind)
        if statuses is not None:
            nodes = nodes.with_statuses(statuses)
        if words:
            nodes = nodes.filter(Q(key__contains=node_key(words)) | Q(name__icontains=words))
        return nodes.order_by("key", "pk")

    def edges(
        self,
        *,
        scope: MemoryScope | None = None,
        grants: Grants | None = None,
        node: GraphNode | str | None = None,
        relation: str | None = None,
        status: str | Iterable[str] | None = None,
    ) -> GraphEdgeQuerySet:
        """The edges the caller may see (those a run of ``scope`` sees, when given), from
        or to ``node``, of the ``relation`` and statuses asked for, by id. Raises
        ``InvalidGraphInput``."""
        errors = Errors()
        kind = errors.relation(relation) if relation is not None else None
        statuses = _statuses(errors, status)
        if scope is not None and not isinstance(scope, MemoryScope):
            errors.add("scope", "A scope is a MemoryScope.")
        errors.raise_any()
        edges = self._visible_edges(grants)
        if scope is not None:
            edges = edges.seen_from(scope)
        if node is not None:
            node_id: Any = node.pk if isinstance(node, GraphNode) else node
            edges = edges.touching([node_id])
        if kind is not None:
            edges = edges.filter(relation=kind)
        if statuses is not None:
            edges = edges.with_statuses(statuses)
        return edges.order_by("pk")
