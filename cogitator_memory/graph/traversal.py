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

    @staticmethod
    def _recursive_walk(
        name: str,
        walk: _Walk,
        *,
        start: str,
        also: str,
        depth: int,
        fan_out: int | None,
    ) -> tuple[str, list[Any]]:
        """The recursive query ``name(node_id, depth)``: the walk from ``start`` while
        ``depth`` is below the bound, stepping along the edges the walk may follow to the
        nodes it may reach (and to ``also``, the start or the other end of a path,
        whatever its status); with ``fan_out``, along each node's heaviest edges only.
        Returns the SQL and its parameters."""
        _connection, nodes, edges = GraphTraversal._tables()
        edge_sql, edge_params = walk.edge("o")
        node_sql, node_params = walk.node("n")
        seed = f"{name}(node_id, depth) AS ( SELECT CAST(%s AS VARCHAR(64)), 0 UNION"
        if fan_out is None:
            # Every edge of each node: a join the planner walks by the edge indexes.
            sql = (
                f"{seed} SELECT CAST({_other_end('o', 'w.node_id')} AS VARCHAR(64)), w.depth + 1"
                f" FROM {name} w"
                f" JOIN {edges} o ON (o.source_id = w.node_id OR o.target_id = w.node_id)"
                f" JOIN {nodes} n ON n.id = {_other_end('o', 'w.node_id')}"
                f" WHERE w.depth < %s AND {edge_sql} AND (n.id = %s OR ({node_sql})))"
            )
            return sql, [start, depth, *edge_params, also, *node_params]
        # Each node's heaviest edges: the ids of a correlated, limited subquery (a join
        # cannot limit per node on SQLite, which has no LATERAL).
        step = (
            f"SELECT o.id FROM {edges} o JOIN {nodes} n ON n.id = {_other_end('o', 'w.node_id')}"
            " WHERE (o.source_id = w.node_id OR o.target_id = w.node_id)"
            f" AND {edge_sql} AND (n.id = %s OR ({node_sql}))"
            " ORDER BY o.weight DESC, o.id LIMIT %s"
        )
        sql = (
            f"{seed} SELECT CAST({_other_end('e', 'w.node_id')} AS VARCHAR(64)), w.depth + 1"
            f" FROM {name} w JOIN {edges} e ON e.id IN ({step})"
            " WHERE w.depth < %s)"
        )
        return sql, [start, *edge_params, also, *node_params, fan_out, depth]

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
        the ``statuses`` asked for, valid at ``as_of`` when given, and the edges among
        them that the walk may follow. Raises ``GraphNodeNotFound`` (a node the caller
        cannot see) and ``InvalidGraphInput``."""
        errors = Errors()
        depth = errors.bound("depth", depth, 0, MAX_DEPTH)
        max_nodes = errors.bound("max_nodes", max_nodes, 1, MAX_NODES)
        fan_out = errors.bound("fan_out", fan_out, 1, MAX_FAN_OUT)
        start = self._node(node_id, grants)
        walk = self._walk(start, errors, statuses=statuses, relations=relations, as_of=as_of)
        connection, _nodes, edges = self._tables()
        walk_sql, walk_params = self._recursive_walk(
            "walk", walk, start=start.pk, also=start.pk, depth=depth, fan_out=fan_out
        )
        edge_sql, edge_params = walk.edge("e")
        # The nodes found and the edges among them, in one statement: ('n', id, depth)
        # rows, then ('e', id, 0) rows.
        sql = (
            f"WITH RECURSIVE {walk_sql},"
            " found AS (SELECT node_id, MIN(depth) AS depth FROM walk GROUP BY node_id"
            "  ORDER BY MIN(depth), node_id LIMIT %s)"
            " SELECT 'n', node_id, depth FROM found"
            " UNION ALL"
            f" SELECT 'e', e.id, 0 FROM {edges} e"
            " WHERE e.source_id IN (SELECT node_id FROM found)"
            f" AND e.target_id IN (SELECT node_id FROM found) AND {edge_sql}"
        )
        params = [*walk_params, max_nodes, *edge_params]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        found = sorted(
            ((int(hops), node) for kind, node, hops in rows if kind == "n"),
        )
        depth_of = {node: hops for hops, node in found}
        edge_ids = [edge for kind, edge, _hops in rows if kind == "e"]
        by_id = GraphNode.objects.in_bulk(list(depth_of))
        ordered = [by_id[node] for node in depth_of if node in by_id]
        linked = list(GraphEdge.objects.filter(pk__in=edge_ids).order_by("pk")) if edge_ids else []
        return Neighbourhood(ordered, linked, depth_of)

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
        target along edges followed either way, by the rules of ``neighbourhood`` (the
        target, too, of the ``statuses`` asked for); among paths of one length, the same
        one every time (chosen by ids). None when there is none (also when the nodes are of
        different scopes: a path never leaves its scope). Raises ``GraphNodeNotFound``
        and ``InvalidGraphInput``.

        The walk goes from both ends at once, half the depth each, in one statement: a
        path of length L costs two walks of about L / 2, not one of L."""
        errors = Errors()
        max_depth = errors.bound("max_depth", max_depth, 1, MAX_DEPTH)
        source = self._node(source_id, grants)
        target = self._node(target_id, grants)
        walk = self._walk(source, errors, statuses=statuses, relations=relations, as_of=None)
        if source.pk == target.pk:
            return GraphPath([source], [])
        if source.scope_key != target.scope_key or target.status not in walk.statuses:
            return None
        connection, _nodes, _edges = self._tables()
        ahead = (max_depth + 1) // 2
        forth_sql, forth_params = self._recursive_walk(
            "forth", walk, start=source.pk, also=target.pk, depth=ahead, fan_out=None
        )
        back_sql, back_params = self._recursive_walk(
            "back", walk, start=target.pk, also=source.pk, depth=max_depth - ahead, fan_out=None
        )
        # Each side's distances (kind 'f' from the source, 'b' from the target).
        sql = (
            f"WITH RECURSIVE {forth_sql}, {back_sql}"
            " SELECT 'f', node_id, MIN(depth) FROM forth GROUP BY node_id"
            " UNION ALL"
            " SELECT 'b', node_id, MIN(depth) FROM back GROUP BY node_id"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*forth_params, *back_params])
            rows = cursor.fetchall()
        forth = {node: int(hops) for kind, node, hops in rows if kind == "f"}
        back = {node: int(hops) for kind, node, hops in rows if kind == "b"}
        meetings = sorted((forth[node] + back[node], node) for node in forth.keys() & back.keys())
        if not meetings:
            return None
        _length, middle = meetings[0]
        to_source_nodes, to_source_edges = self._back_from(middle, forth, walk)
        to_target_nodes, to_target_edges = self._back_from(middle, back, walk)
        node_ids = [*reversed(to_source_nodes), *to_target_nodes[1:]]
        edge_ids = [*reversed(to_source_edges), *to_target_edges]
        found_nodes = GraphNode.objects.in_bulk(node_ids)
        found_edges = GraphEdge.objects.in_bulk(edge_ids)
        return GraphPath(
            [found_nodes[node] for node in node_ids], [found_edges[edge] for edge in edge_ids]
        )

    def _back_from(
        self, node_id: str, distance: dict[str, int], walk: _Walk
    ) -> tuple[list[str], list[str]]:
        """The node and edge ids from ``node_id`` back to where ``distance`` counts from,
        stepping each time to a node one nearer (the smallest id, then the smallest edge
        id)."""
        connection, _nodes, edges = self._tables()
        edge_sql, edge_params = walk.edge("e")
        sql = (
            f"SELECT e.id, {_other_end('e', '%s')} FROM {edges} e"
            f" WHERE (e.source_id = %s OR e.target_id = %s) AND {edge_sql}"
        )
        node_ids, edge_ids = [node_id], []
        current = node_id
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
        return node_ids, edge_ids
