"""Merging nodes that name one thing (``GraphMerging.merge_nodes``).

The node kept takes the others' names (as aliases), aliases, properties (its own win),
evidence and edges; an edge that the merge would turn into a loop goes, and edges that
become one (same ends, same relation) are folded into one that keeps all their evidence.
Everything happens in one transaction, or nothing does."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from cogitator_memory import policy
from cogitator_memory.exceptions import GraphScopeMismatch, InvalidGraphInput
from cogitator_memory.grants import Grants
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.graph.rules import GraphRules
from cogitator_memory.graph.writing import better_trust, merged_aliases

__all__ = ["GraphMerging"]

# Which status of folded edges the one kept takes: active when any was, then suggested.
_STATUS_RANK = {
    GraphStatus.REJECTED.value: 0,
    GraphStatus.SUGGESTED.value: 1,
    GraphStatus.ACTIVE.value: 2,
}


class GraphMerging(GraphRules):
    @transaction.atomic
    def merge_nodes(
        self, keep_id: str, merge_ids: Iterable[str], *, grants: Grants | None = None
    ) -> GraphNode:
        """Merge the nodes of ``merge_ids`` into the node ``keep_id`` and delete them.
        The node kept keeps its name, type, status and valid time, and gains the merged
        nodes' names and aliases as aliases, their properties under its own, the better
        trust, their evidence and their edges (``merging``). Raises
        ``GraphNodeNotFound``, ``InvalidGraphInput`` (the node kept among those merged),
        ``GraphScopeMismatch`` (nodes of different scopes) and ``NoGrant``. Returns the
        node kept."""
        if isinstance(merge_ids, str) or not isinstance(merge_ids, Iterable):
            raise InvalidGraphInput({"merge_ids": "A list of node ids."})
        wanted = list(dict.fromkeys(merge_ids))
        keep_key = keep_id.pk if isinstance(keep_id, GraphNode) else keep_id
        if keep_key in wanted:
            raise InvalidGraphInput({"merge_ids": "The node kept cannot be merged into itself."})
        keep = self._node(keep_id, grants)
        others = [self._node(node_id, grants) for node_id in wanted]
        policy.require_write(grants, keep.agent_id, keep.user_id, user_field="scope.user_id")
        strangers = [node.pk for node in others if node.scope_key != keep.scope_key]
        if strangers:
            raise GraphScopeMismatch("merge_ids", [keep.pk, *strangers])
        if not others:
            return keep
        self.lock_agents([keep.agent_id])
        keep = self._node(keep.pk, grants, lock=True)
        gone = [node.pk for node in others]
        others = list(GraphNode.objects.select_for_update().filter(pk__in=gone).order_by("pk"))
        order = {node_id: index for index, node_id in enumerate(wanted)}
        others.sort(key=lambda node: order[node.pk])

        keep.aliases = merged_aliases(
            keep.name,
            keep.aliases or [],
            *([node.name, *(node.aliases or [])] for node in others),
        )
        properties: dict[str, Any] = {}
        for node in reversed(others):
            properties.update(node.properties or {})
        keep.properties = {**properties, **(keep.properties or {})}
        for node in others:
            keep.trust = better_trust(keep.trust, node.trust)
            if keep.entity_id is None and node.entity_id is not None:
                keep.entity_id = node.entity_id
        keep.updated_at = self.clock()
        keep.save()
        GraphEvidence.objects.filter(node_id__in=gone).update(node=keep)
        self._repoint_edges(keep, set(gone))
        GraphNode.objects.filter(pk__in=gone).delete()
        return keep

    def _repoint_edges(self, keep: GraphNode, gone: set[str]) -> None:
        """Point the merged nodes' edges at the node kept: drop the loops this makes, and
        fold each group of edges that become one into one (the edge that already stood
        there, else the one of the smallest id), with all their evidence."""
        touched = list(GraphEdge.objects.select_for_update().touching(gone).order_by("pk"))
        if not touched:
            return
        ends = {
            edge.pk: (
                keep.pk if edge.source_id in gone else edge.source_id,
                keep.pk if edge.target_id in gone else edge.target_id,
            )
            for edge in touched
        }
        loops = [edge.pk for edge in touched if ends[edge.pk][0] == ends[edge.pk][1]]
        GraphEdge.objects.filter(pk__in=loops).delete()
        groups: dict[tuple[str, str, str], list[GraphEdge]] = {}
        for edge in touched:
            if edge.pk in loops:
                continue
            groups.setdefault((*ends[edge.pk], edge.relation), []).append(edge)
        now = self.clock()
        for (source_id, target_id, relation), edges in groups.items():
            standing = (
                GraphEdge.objects.select_for_update()
                .filter(source_id=source_id, target_id=target_id, relation=relation)
                .exclude(pk__in=[edge.pk for edge in edges])
                .first()
            )
            kept = standing or edges[0]
            folded = [edge for edge in edges if edge.pk != kept.pk]
            for edge in folded:
                kept.properties = {**(edge.properties or {}), **(kept.properties or {})}
                kept.weight = max(kept.weight, edge.weight)
                kept.trust = better_trust(kept.trust, edge.trust)
                kept.status = max(
                    kept.status, edge.status, key=lambda status: _STATUS_RANK[str(status)]
                )
                if kept.valid_from is None:
                    kept.valid_from = edge.valid_from
                if kept.valid_to is None:
                    kept.valid_to = edge.valid_to
            folded_ids = [edge.pk for edge in folded]
            GraphEvidence.objects.filter(edge_id__in=folded_ids).update(edge=kept)
            GraphEdge.objects.filter(pk__in=folded_ids).delete()
            kept.source_id, kept.target_id = source_id, target_id
            kept.updated_at = now
            kept.save()
