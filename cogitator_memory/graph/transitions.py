"""The changes of status of nodes and edges (``GraphTransitions``): a reviewer activates
or rejects them (``graph.review``). Each locks the agents it changes and changes only the
rows the caller may see, of the statuses the decision applies to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction

from cogitator_memory.grants import Grants
from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from cogitator_memory.graph.rules import GraphRules
from cogitator_memory.jsondata import storable_text

__all__ = ["GraphTransitions"]


class GraphTransitions(GraphRules):
    def _set_status(
        self,
        model: type[GraphNode] | type[GraphEdge],
        ids: Iterable[str],
        status: str,
        *,
        grants: Grants | None,
        from_statuses: Sequence[str] | None,
    ) -> list[str]:
        wanted = [i for i in dict.fromkeys(ids) if storable_text(i)]
        rows: Any = model.objects.filter(pk__in=wanted)
        if grants is not None:
            rows = rows.visible_to(grants)
        if from_statuses is not None:
            rows = rows.with_statuses(from_statuses)
        self.lock_agents(rows.values_list("agent_id", flat=True))
        changed = list(rows.select_for_update().order_by("pk").values_list("pk", flat=True))
        model.objects.filter(pk__in=changed).update(status=status, updated_at=self.clock())
        return changed

    # The review decisions pass the statuses each applies to as ``from_statuses``; rows in
    # another status are left as they are. Without it (trusted code) any status goes.

    @transaction.atomic
    def activate_nodes(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None = None,
        from_statuses: Sequence[str] | None = None,
    ) -> list[str]:
        """Nodes become active (a reviewer's approval). Returns the ids activated."""
        return self._set_status(
            GraphNode, ids, GraphStatus.ACTIVE, grants=grants, from_statuses=from_statuses
        )

    @transaction.atomic
    def reject_nodes(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None = None,
        from_statuses: Sequence[str] | None = None,
    ) -> list[str]:
        """Nodes become rejected: out of every traversal of active nodes, kept for the
        record. Returns the ids rejected."""
        return self._set_status(
            GraphNode, ids, GraphStatus.REJECTED, grants=grants, from_statuses=from_statuses
        )

    @transaction.atomic
    def activate_edges(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None = None,
        from_statuses: Sequence[str] | None = None,
    ) -> list[str]:
        """Edges become active. Returns the ids activated."""
        return self._set_status(
            GraphEdge, ids, GraphStatus.ACTIVE, grants=grants, from_statuses=from_statuses
        )

    @transaction.atomic
    def reject_edges(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None = None,
        from_statuses: Sequence[str] | None = None,
    ) -> list[str]:
        """Edges become rejected. Returns the ids rejected."""
        return self._set_status(
            GraphEdge, ids, GraphStatus.REJECTED, grants=grants, from_statuses=from_statuses
        )
