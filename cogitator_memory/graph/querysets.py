"""Named filters of graph nodes, edges and their evidence."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models

from cogitator_memory.grants import ScopedQuerySet

if TYPE_CHECKING:
    from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode  # noqa: F401


def valid_at_q(moment: datetime) -> models.Q:
    """Rows that held at ``moment``: begun by then (or of no known start), not ended."""
    return (models.Q(valid_from__isnull=True) | models.Q(valid_from__lte=moment)) & (
        models.Q(valid_to__isnull=True) | models.Q(valid_to__gt=moment)
    )


class GraphNodeQuerySet(ScopedQuerySet["GraphNode"]):
    def with_statuses(self, statuses: Iterable[str]) -> GraphNodeQuerySet:
        """Nodes of any of these statuses."""
        return self.filter(status__in=list(statuses))

    def valid_at(self, moment: datetime) -> GraphNodeQuerySet:
        """Nodes that held at ``moment``."""
        return self.filter(valid_at_q(moment))


class GraphEdgeQuerySet(ScopedQuerySet["GraphEdge"]):
    def with_statuses(self, statuses: Iterable[str]) -> GraphEdgeQuerySet:
        """Edges of any of these statuses."""
        return self.filter(status__in=list(statuses))

    def valid_at(self, moment: datetime) -> GraphEdgeQuerySet:
        """Edges that held at ``moment``."""
        return self.filter(valid_at_q(moment))

    def touching(self, node_ids: Iterable[str]) -> GraphEdgeQuerySet:
        """Edges from or to any of these nodes."""
        ids = list(node_ids)
        return self.filter(models.Q(source_id__in=ids) | models.Q(target_id__in=ids))


class GraphEvidenceQuerySet(models.QuerySet["GraphEvidence"]):
    def of_entries(self, entry_ids: list[str]) -> GraphEvidenceQuerySet:
        """Evidence quoting any of these entries (what stands on them)."""
        return self.filter(entry_id__in=entry_ids)
