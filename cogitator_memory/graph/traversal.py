"""Multi-hop reads of the graph (``GraphTraversal``): a node's neighbourhood and the
shortest path between two nodes, each walked by ONE recursive query on PostgreSQL and
SQLite alike.

The walk follows edges both ways. At every hop it stays in the exact scope of the node it
starts from (the scope's digest, ``scope_key``, on the edge and on the node it steps to:
edges only ever join nodes of one scope, and the caller's grants were checked on that
scope, which every row of it shares), and keeps only edges and nodes of the statuses asked
for, of the relations asked for, and, with ``as_of``, valid then. The node it starts from
is always part of the answer. ``UNION`` keeps one row per node and depth, so a cycle ends
at the depth bound; a neighbourhood reads at most ``fan_out`` edges per node, the heaviest
first, so a walk costs at most ``fan_out ** depth`` steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connections, router

from cogitator_memory.grants import Grants
from cogitator_memory.graph.inputs import MAX_DEPTH, MAX_FAN_OUT, MAX_NODES, Errors
from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from cogitator_memory.graph.rules import GraphRules

__all__ = ["GraphPath", "GraphTraversal", "Neighbourhood"]

ACTIVE_ONLY = (GraphStatus.ACTIVE.value,)


@dataclass(frozen=True)
class Neighbourhood:
    """The nodes within reach (nearest first, then by id), the edges among them that the
    walk may follow, and each node's distance from the start."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]
    depth_of: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphPath:
    """A shortest path: its nodes from source to target and the edges between them, in
    order (``len(edges) == len(nodes) - 1``)."""

    nodes: list[GraphNode]
    edges: list[GraphEdge]

    @property
    def length(self) -> int:
        return len(self.edges)


@dataclass(frozen=True)
class _Walk:
    """The filters of one walk, as SQL on an edge (``e``) and the node it reaches (``n``)."""

    scope_key: str
    statuses: Sequence[str]
    relations: Sequence[str] | None
    as_of: Any

    def _common(self, alias: str) -> tuple[str, list[Any]]:
        marks = ", ".join(["%s"] * len(self.statuses))
        sql = f"{alias}.scope_key = %s AND {alias}.status IN ({marks})"
        params: list[Any] = [self.scope_key, *self.statuses]
        if self.as_of is not None:
            sql += (
                f" AND ({alias}.valid_from IS NULL OR {alias}.valid_from <= %s)"
                f" AND ({alias}.valid_to IS NULL OR {alias}.valid_to > %s)"
            )
            params += [self.as_of, self.as_of]
        return sql, params

    def edge(self, alias: str) -> tuple[str, list[Any]]:
        sql, params = self._common(alias)
        if self.relations is not None:
            sql += f" AND {alias}.relation IN ({', '.join(['%s'] * len(self.relations))})"
            params += list(self.relations)
        return sql, params

    def node(self, alias: str) -> tuple[str, list[Any]]:
        return self._common(alias)


def _other_end(edge: str, node: str) -> str:
    """The end of ``edge`` that is not ``node`` (the walk goes both ways)."""
    return f"CASE WHEN {edge}.source_id = {node} THEN {edge}.target_id ELSE {edge}.source_id END"


class GraphTraversal(GraphRules):
    """Neighbourhoods and shortest paths."""

    @staticmethod
    def _tables() -> tuple[Any, str, str]:
        connection = connections[router.db_for_read(GraphNode)]
        quote = connection.ops.quote_name
        return connection, quote(GraphNode._meta.db_table), quote(GraphEdge._meta.db_table)

    def _walk(
        self,
        start: GraphNode,
        errors: Errors,
        *,
        statuses: Iterable[str],
        relations: Iterable[str] | None,
        as_of: datetime | None,
    ) -> _Walk:
        chosen = errors.statuses(statuses)
        kinds = errors.relations(relations)
        moment = errors.moment("as_of", as_of)
        errors.raise_any()
        connection, _nodes, _edges = self._tables()
        adapted = connection.ops.adapt_datetimefield_value(moment) if moment else None
        return _Walk(start.scope_key, chosen, kinds, adapted)

    def neighbourhood(
        self,
        node_id: str,
        *,
        depth: int = 2,
        max_nodes: int = 50,
        fan_out: int = 25,
        relations: Iterable[str] | None = None,
        statuses: Iterable[str] = ACTIVE_ONLY,
        as_of: datetime | None = None,
        grants: Grants | None = None,
    ) -> Neighbourhood:
        """The nodes within ``depth`` edges of the node (the nearest ``max_nodes``, the
        node itself among them), following at most ``fan_out`` edges from each node (the
        heaviest, then by id), of the ``relations`` asked for (None: every relation) and
        the ``statuses`` asked for, valid at ``as_of`` when given. Raises
        ``GraphNodeNotFound`` (a node the caller cannot see) and ``InvalidGraphInput``."""
        errors = Errors()
        depth = errors.bound("depth", depth, 0, MAX_DEPTH)
        max_nodes = errors.bound("max_nodes", max_nodes, 1, MAX_NODES)
        fan_out = errors.bound("fan_out", fan_out, 1, MAX_FAN_OUT)
        start = self._node(node_id, grants)
        walk = self._walk(start, errors, statuses=statuses, relations=relations, as_of=as_of)
        connection, nodes, edges = self._tables()
        edge_sql, edge_params = walk.edge("o")
        node_sql, node_params = walk.node("n")
        sql = (
            "WITH RECURSIVE walk(node_id, depth) AS ("
            " SELECT CAST(%s AS VARCHAR(64)), 0"
            " UNION"
            f" SELECT CAST({_other_end('e', 'w.node_id')} AS VARCHAR(64)), w.depth + 1"
            f" FROM walk w JOIN {edges} e ON e.id IN ("
            f"  SELECT o.id FROM {edges} o JOIN {nodes} n ON n.id = {_other_end('o', 'w.node_id')}"
            f"  WHERE (o.source_id = w.node_id OR o.target_id = w.node_id)"
            f"  AND {edge_sql} AND {node_sql}"
            "   ORDER BY o.weight DESC, o.id LIMIT %s)"
            " WHERE w.depth < %s"
            ")"
            " SELECT node_id, MIN(depth) FROM walk GROUP BY node_id"
            " ORDER BY MIN(depth), node_id LIMIT %s"
        )
        params = [start.pk, *edge_params, *node_params, fan_out, depth, max_nodes]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            depth_of = {node: int(hops) for node, hops in cursor.fetchall()}
        found = GraphNode.objects.in_bulk(list(depth_of))
        ordered = [found[node] for node in depth_of if node in found]
        return Neighbourhood(ordered, self._edges_among(list(depth_of), walk), depth_of)

    def _edges_among(self, node_ids: list[str], walk: _Walk) -> list[GraphEdge]:
        """The edges the walk may follow between these nodes, by id."""
        if len(node_ids) < 2:
            return []
        connection, _nodes, edges = self._tables()
        edge_sql, edge_params = walk.edge("e")
        marks = ", ".join(["%s"] * len(node_ids))
        sql = (
            f"SELECT e.id FROM {edges} e WHERE e.source_id IN ({marks})"
            f" AND e.target_id IN ({marks}) AND {edge_sql}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*node_ids, *node_ids, *edge_params])
            ids = [row[0] for row in cursor.fetchall()]
        return list(GraphEdge.objects.filter(pk__in=ids).order_by("pk"))

    def shortest_path(
        self,
        source_id: str,
        target_id: str,
        *,
        max_depth: int = 4,
        relations: Iterable[str] | None = None,
        statuses: Iterable[str] = ACTIVE_ONLY,
        grants: Grants | None = None,
    ) -> GraphPath | None:
        """A shortest path (fewest edges, at most ``max_depth``) from the source to the
        target along edges followed either way, by the rules of ``neighbourhood``; among
        paths of one length, the one through the smallest ids. None when there is none
        (also when the nodes are of different scopes: a path never leaves its scope).
        Raises ``GraphNodeNotFound`` and ``InvalidGraphInput``."""
        errors = Errors()
        max_depth = errors.bound("max_depth", max_depth, 1, MAX_DEPTH)
        source = self._node(source_id, grants)
        target = self._node(target_id, grants)
        walk = self._walk(source, errors, statuses=statuses, relations=relations, as_of=None)
        if source.pk == target.pk:
            return GraphPath([source], [])
        if source.scope_key != target.scope_key:
            return None
        connection, nodes, edges = self._tables()
        edge_sql, edge_params = walk.edge("e")
        node_sql, node_params = walk.node("n")
        sql = (
            "WITH RECURSIVE walk(node_id, depth) AS ("
            " SELECT CAST(%s AS VARCHAR(64)), 0"
            " UNION"
            f" SELECT CAST({_other_end('e', 'w.node_id')} AS VARCHAR(64)), w.depth + 1"
            f" FROM walk w JOIN {edges} e ON (e.source_id = w.node_id OR e.target_id = w.node_id)"
            f" JOIN {nodes} n ON n.id = {_other_end('e', 'w.node_id')}"
            f" WHERE w.depth < %s AND w.node_id <> %s AND {edge_sql} AND {node_sql}"
            "), reached AS (SELECT node_id, MIN(depth) AS depth FROM walk GROUP BY node_id)"
            " SELECT node_id, depth FROM reached"
            " WHERE depth < (SELECT depth FROM reached WHERE node_id = %s) OR node_id = %s"
        )
        params = [source.pk, max_depth, target.pk, *edge_params, *node_params]
        params += [target.pk, target.pk]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            distance = {node: int(hops) for node, hops in cursor.fetchall()}
        if target.pk not in distance:
            return None
        node_ids, edge_ids = self._back_from(target.pk, distance, walk)
        found_nodes = GraphNode.objects.in_bulk(node_ids)
        found_edges = GraphEdge.objects.in_bulk(edge_ids)
        return GraphPath(
            [found_nodes[node] for node in node_ids], [found_edges[edge] for edge in edge_ids]
        )

    def _back_from(
        self, target_id: str, distance: dict[str, int], walk: _Walk
    ) -> tuple[list[str], list[str]]:
        """The path's node and edge ids, from the source: stepping back from the target to
        a node one nearer the source (the smallest id, then the smallest edge id)."""
        connection, _nodes, edges = self._tables()
        edge_sql, edge_params = walk.edge("e")
        sql = (
            f"SELECT e.id, {_other_end('e', '%s')} FROM {edges} e"
            f" WHERE (e.source_id = %s OR e.target_id = %s) AND {edge_sql}"
        )
        node_ids, edge_ids = [target_id], []
        current = target_id
        with connection.cursor() as cursor:
            while distance[current] > 0:
                cursor.execute(sql, [current, current, current, *edge_params])
                nearer = distance[current] - 1
                steps = sorted(
                    (other, edge)
                    for edge, other in cursor.fetchall()
                    if distance.get(other) == nearer
                )
                current, edge = steps[0]
                node_ids.append(current)
                edge_ids.append(edge)
        node_ids.reverse()
        edge_ids.reverse()
        return node_ids, edge_ids
