"""The review decisions on graph nodes and edges, one action class each:
``ActivateGraphNodes``, ``RejectGraphNodes``, ``ActivateGraphEdges``,
``RejectGraphEdges`` (``cogitator_memory.review.ReviewAction``).

Each owns its permission (``cogitator_memory.activate_graphnode``, ``reject_graphnode``,
``activate_graphedge``, ``reject_graphedge``), the statuses it applies to (listed here
only), the ``MemoryGraph`` call with the caller's grants, the reason rule of a rejection
and the admin log. The admin and the API are adapters of them::

    RejectGraphEdges(request.user, grants=grants, via=Via.API).execute(ids, reason="wrong")
"""

from __future__ import annotations

from typing import Any

from cogitator_memory.exceptions import (
    GraphEdgeNotFound,
    GraphEdgeNotReviewable,
    GraphNodeNotFound,
    GraphNodeNotReviewable,
    InvalidGraphInput,
)
from cogitator_memory.grants import Grants
from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.review import ReviewAction, Via

__all__ = [
    "ActivateGraphEdges",
    "ActivateGraphNodes",
    "GraphEdgeReview",
    "GraphNodeReview",
    "RejectGraphEdges",
    "RejectGraphNodes",
]


class _GraphReview:
    """``graph`` is the ``MemoryGraph`` that makes the decision (tests pass their own)."""

    def _init_graph(self, graph: MemoryGraph | None) -> None:
        self.graph = graph or MemoryGraph()


class GraphNodeReview(_GraphReview, ReviewAction[GraphNode]):
    """A review decision on graph nodes."""

    model = GraphNode
    invalid = InvalidGraphInput
    not_found = GraphNodeNotFound
    not_reviewable = GraphNodeNotReviewable

    def __init__(
        self,
        user: Any,
        *,
        grants: Grants,
        via: Via,
        api_key: object | None = None,
        graph: MemoryGraph | None = None,
    ) -> None:
        super().__init__(user, grants=grants, via=via, api_key=api_key)
        self._init_graph(graph)


class GraphEdgeReview(_GraphReview, ReviewAction[GraphEdge]):
    """A review decision on graph edges."""

    model = GraphEdge
    invalid = InvalidGraphInput
    not_found = GraphEdgeNotFound
    not_reviewable = GraphEdgeNotReviewable

    def __init__(
        self,
        user: Any,
        *,
        grants: Grants,
        via: Via,
        api_key: object | None = None,
        graph: MemoryGraph | None = None,
    ) -> None:
        super().__init__(user, grants=grants, via=via, api_key=api_key)
        self._init_graph(graph)


class ActivateGraphNodes(GraphNodeReview):
    """A reviewer's approval: suggested (or rejected) nodes become active."""

    name = "activate"
    done = "activated"
    statuses = (GraphStatus.SUGGESTED, GraphStatus.REJECTED)

    def transition(self, ids: list[str], reason: str) -> list[str]:
        return self.graph.activate_nodes(ids, grants=self.grants, from_statuses=self.statuses)


class RejectGraphNodes(GraphNodeReview):
    """A reviewer's refusal, with the reason (in the admin log): the nodes leave every
    traversal of active nodes and stay for the record."""

    name = "reject"
    done = "rejected"
    statuses = (GraphStatus.SUGGESTED, GraphStatus.ACTIVE)
    takes_reason = True

    def transition(self, ids: list[str], reason: str) -> list[str]:
        return self.graph.reject_nodes(ids, grants=self.grants, from_statuses=self.statuses)


class ActivateGraphEdges(GraphEdgeReview):
    """A reviewer's approval: suggested (or rejected) edges become active."""

    name = "activate"
    done = "activated"
    statuses = (GraphStatus.SUGGESTED, GraphStatus.REJECTED)

    def transition(self, ids: list[str], reason: str) -> list[str]:
        return self.graph.activate_edges(ids, grants=self.grants, from_statuses=self.statuses)


class RejectGraphEdges(GraphEdgeReview):
    """A reviewer's refusal, with the reason (in the admin log)."""

    name = "reject"
    done = "rejected"
    statuses = (GraphStatus.SUGGESTED, GraphStatus.ACTIVE)
    takes_reason = True

    def transition(self, ids: list[str], reason: str) -> list[str]:
        return self.graph.reject_edges(ids, grants=self.grants, from_statuses=self.statuses)
