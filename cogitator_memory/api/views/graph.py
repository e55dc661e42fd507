"""The knowledge graph: nodes and edges (lists, upserts, changes, deletion), the review
actions activate and reject, merging nodes, a node's neighbourhood and the shortest path
between two nodes.

What a principal writes carries its trust: a person (session or token) says it as the
user, an API key (a program) as a model, so that a program's node or edge stays
suggested until a person reviews it, as a model's memory items do. A node or an edge the
principal's grants do not reach answers 404 as a missing one does; a node named in a body
or a query that it cannot see is bad input (400, the field named), the same answer for
one that does not exist. Reviews are made by people holding the action's permission
(``cogitator_memory.activate_graphnode``, ``reject_graphnode``, ``activate_graphedge``,
``reject_graphedge``), as for memory items.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from cogitator_memory import policy
from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.graph import (
    GraphEdgeCreateSerializer,
    GraphEdgeDetailSerializer,
    GraphEdgePageSerializer,
    GraphEdgeQuerySerializer,
    GraphEdgeSerializer,
    GraphEdgeUpdateSerializer,
    GraphMergeSerializer,
    GraphNodeCreateSerializer,
    GraphNodeDetailSerializer,
    GraphNodePageSerializer,
    GraphNodeQuerySerializer,
    GraphNodeSerializer,
    GraphNodeUpdateSerializer,
    GraphPathQuerySerializer,
    GraphPathSerializer,
    GraphRejectSerializer,
    NeighbourhoodQuerySerializer,
    NeighbourhoodSerializer,
)
from cogitator_memory.api.views.base import (
    COMMON_ERRORS,
    ERROR_400,
    ERROR_404,
    MemoryAPIView,
)
from cogitator_memory.exceptions import GraphNodeNotFound, InvalidGraphInput
from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.inputs import node_key, normal_words
from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from cogitator_memory.graph.naming import nodes_named
from cogitator_memory.graph.review import (
    ActivateGraphEdges,
    ActivateGraphNodes,
    GraphEdgeReview,
    GraphNodeReview,
    RejectGraphEdges,
    RejectGraphNodes,
)
from cogitator_memory.graph.rules import scope_key_of
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.graph.writing import DEFAULT_TYPE
from cogitator_memory.items.models import Trust
from cogitator_memory.items.statements import NewEvidence
from cogitator_memory.limits import page_limit
from cogitator_memory.review import Via
from cogitator_memory.threads.models import Thread

ERROR_403_REVIEW = OpenApiResponse(
    ErrorSerializer,
    description="An API key, or a user without the action's permission (review_not_permitted).",
)
ERROR_409_NODE_REVIEW = OpenApiResponse(
    ErrorSerializer,
    description="The node's status does not take this action (graph_node_not_reviewable).",
)
ERROR_409_EDGE_REVIEW = OpenApiResponse(
    ErrorSerializer,
    description="The edge's status does not take this action (graph_edge_not_reviewable).",
)
ERROR_409_NAME = OpenApiResponse(
    ErrorSerializer,
    description="Another node of the scope and type has the name (graph_name_taken); merge "
    "them instead.",
)
ERROR_409_EDGE = OpenApiResponse(
    ErrorSerializer,
    description="The nodes have another edge of the relation (graph_edge_taken).",
)
# The fields of the services' errors, as the API's bodies name them.
FIELD_NAMES = {"entity": "entity_id", "merge_ids": "merge"}


def evidence_of(data: Mapping[str, Any]) -> list[NewEvidence]:
    return [
        NewEvidence(
            quote["quote"],
            quote.get("entry_id"),
            quote.get("tool_call_id"),
            quote.get("file_range"),
        )
        for quote in data.get("evidence", [])
    ]


def comma_list(text: str | None) -> list[str] | None:
    """The values of a query parameter separated by commas; None when it was not given."""
    return text.split(",") if text else None


@contextmanager
def api_fields(**named: str | Sequence[str]) -> Iterator[None]:
    """The services' errors as the request named its fields: a node the request names
    (``named``: field -> the id or ids given there) that the caller cannot see is bad
    input on that field, as one that does not exist is; other fields by ``FIELD_NAMES``."""
    try:
        yield
    except GraphNodeNotFound as exc:
        field = next(
            (
                name
                for name, given in named.items()
                if exc.node_id == given or (not isinstance(given, str) and exc.node_id in given)
            ),
            next(iter(named), "node"),
        )
        raise InvalidGraphInput(
            {field: f"No graph node {exc.node_id!r} is within your grants."}
        ) from exc
    except InvalidGraphInput as exc:
        exc.errors = {FIELD_NAMES.get(name, name): errors for name, errors in exc.errors.items()}
        raise


class GraphAPIView(MemoryAPIView):
    graph = MemoryGraph()

    def writer_trust(self) -> str:
        """Who says what the principal writes: a person the user, a program a model."""
        return Trust.MODEL if self.api_key is not None else Trust.USER

    def visible_node(self, node_id: str) -> GraphNode:
        """The node if the caller's grants reach it; ``GraphNodeNotFound`` (404) otherwise."""
        return self.graph.get_node(node_id, grants=self.grants)

    def visible_edge(self, edge_id: str) -> GraphEdge:
        """The edge if the caller's grants reach it; ``GraphEdgeNotFound`` (404) otherwise."""
        return self.graph.get_edge(edge_id, grants=self.grants)

    def evidence_context(self, row: GraphNode | GraphEdge) -> dict[str, Any]:
        """The threads of the row's quotes that the caller may open (the others' entries
        are left out of the answer, their quotes kept)."""
        thread_ids = set(
            row.evidence.filter(entry__isnull=False).values_list("entry__thread_id", flat=True)
        )
        visible = Thread.objects.visible_to(self.grants).filter(pk__in=thread_ids)
        return {"visible_threads": set(visible.values_list("pk", flat=True))}

    def page(self, request: Request, rows: QuerySet[Any], params: Mapping[str, Any]) -> Any:
        """One page of ``rows`` by id, after ``cursor``, as ``(rows, next_cursor, next)``."""
        size = page_limit(params.get("limit"))
        rows = rows.order_by("pk")
        if params.get("cursor"):
            rows = rows.filter(pk__gt=params["cursor"])
        found = list(rows[: size + 1])
        if len(found) <= size:
            return found, None, None
        cursor = str(found[size - 1].pk)
        return (
            found[:size],
            cursor,
            replace_query_param(request.build_absolute_uri(), "cursor", cursor),
        )


def _delete(row: GraphNode | GraphEdge, grants: Any) -> None:
    """Delete a node (its edges and quotes with it) or an edge (its quotes with it), one
    after another with the agent's other graph writes."""
    policy.require_write(grants, row.agent_id, row.user_id, user_field="user_id")
    with transaction.atomic():
        MemoryGraph.lock_agents([row.agent_id])
        type(row).objects.filter(pk=row.pk).delete()


# --- nodes ------------------------------------------------------------------------------


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_graph_nodes_list",
        summary="List graph nodes",
        description="Nodes you may see, by id, page by page.",
        parameters=[GraphNodeQuerySerializer],
        responses={200: GraphNodePageSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
    post=extend_schema(
        operation_id="memory_graph_nodes_create",
        summary="Write a graph node",
        description="A node of one exact scope: 201 when new, 200 when merged into the "
        "node of the same type and name there (its aliases, properties and quotes grow). "
        "A person's node with quotes that all hold is active; any other is suggested, "
        "for review.",
        request=GraphNodeCreateSerializer,
        responses={
            201: GraphNodeDetailSerializer,
            200: GraphNodeDetailSerializer,
            400: ERROR_400,
            **COMMON_ERRORS,
        },
    ),
)
class GraphNodeListView(GraphAPIView):
    serializer_class = GraphNodeSerializer

    def get(self, request: Request) -> Response:
        query = GraphNodeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        nodes = self.graph.nodes(
            grants=self.grants, type=params.get("type"), status=comma_list(params.get("status"))
        )
        for name in ("agent_id", "user_id"):
            if name in params:
                nodes = nodes.filter(**{name: params[name]})
        if "search" in params:
            nodes = nodes_named(nodes, params["search"])
        found, cursor, next_url = self.page(request, nodes, params)
        return Response(
            {
                "results": GraphNodeSerializer(found, many=True).data,
                "next_cursor": cursor,
                "next": next_url,
            }
        )

    def post(self, request: Request) -> Response:
        payload = GraphNodeCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        policy.require_write(
            self.grants, data["agent_id"], data.get("user_id"), user_field="user_id"
        )
        scope = MemoryScope(
            data["agent_id"],
            user_id=data.get("user_id"),
            project_id=data.get("project_id"),
            thread_id=data.get("thread_id"),
        )
        kind = data.get("type", DEFAULT_TYPE)
        existed = GraphNode.objects.filter(
            scope_key=scope_key_of(scope), type=normal_words(kind), key=node_key(data["name"])
        ).exists()
        with api_fields():
            node = self.graph.add_node(
                scope,
                name=data["name"],
                type=kind,
                aliases=data.get("aliases", []),
                properties=data.get("properties"),
                evidence=evidence_of(data),
                trust=self.writer_trust(),
                valid_from=data.get("valid_from"),
                valid_to=data.get("valid_to"),
                entity=data.get("entity_id"),
                grants=self.grants,
            )
        code = status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        body = GraphNodeDetailSerializer(node, context=self.evidence_context(node)).data
        return Response(body, status=code)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_graph_nodes_retrieve",
        summary="Read a graph node with its evidence",
        responses={200: GraphNodeDetailSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
    patch=extend_schema(
        operation_id="memory_graph_nodes_partial_update",
        summary="Change a graph node",
        description="The fields given change; `evidence` replaces its quotes. Its status "
        "changes by review only.",
        request=GraphNodeUpdateSerializer,
        responses={
            200: GraphNodeDetailSerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409_NAME,
            **COMMON_ERRORS,
        },
    ),
    delete=extend_schema(
        operation_id="memory_graph_nodes_destroy",
        summary="Delete a graph node with its edges and evidence",
        responses={204: None, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class GraphNodeDetailView(GraphAPIView):
    serializer_class = GraphNodeDetailSerializer

    def get(self, request: Request, node_id: str) -> Response:
        node = self.visible_node(node_id)
        return Response(GraphNodeDetailSerializer(node, context=self.evidence_context(node)).data)

    def patch(self, request: Request, node_id: str) -> Response:
        node = self.visible_node(node_id)
        payload = GraphNodeUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(payload.validated_data)
        if "evidence" in data:
            data["evidence"] = evidence_of(data)
        if "entity_id" in data:
            data["entity"] = data.pop("entity_id")
        with api_fields():
            node = self.graph.update_node(node.pk, grants=self.grants, **data)
        return Response(GraphNodeDetailSerializer(node, context=self.evidence_context(node)).data)

    def delete(self, request: Request, node_id: str) -> Response:
        _delete(self.visible_node(node_id), self.grants)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_graph_nodes_neighbourhood",
        summary="The nodes near a graph node",
        description="The nodes within `depth` edges of the node (edges followed both ways, "
        "within its scope), nearest first, with the edges among them.",
        parameters=[NeighbourhoodQuerySerializer],
        responses={
            200: NeighbourhoodSerializer,
            400: ERROR_400,
            404: ERROR_404,
            **COMMON_ERRORS,
        },
    ),
)
class GraphNeighbourhoodView(GraphAPIView):
    serializer_class = NeighbourhoodSerializer

    def get(self, request: Request, node_id: str) -> Response:
        node = self.visible_node(node_id)
        query = NeighbourhoodQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        with api_fields():
            found = self.graph.neighbourhood(
                node.pk,
                depth=params.get("depth", 2),
                max_nodes=params.get("max_nodes", 50),
                relations=comma_list(params.get("relations")),
                statuses=comma_list(params.get("status")) or [GraphStatus.ACTIVE],
                as_of=params.get("as_of"),
                grants=self.grants,
            )
        nodes = [
            {**GraphNodeSerializer(neighbour).data, "depth": found.depth_of[neighbour.pk]}
            for neighbour in found.nodes
        ]
        return Response({"nodes": nodes, "edges": GraphEdgeSerializer(found.edges, many=True).data})


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_graph_nodes_merge",
        summary="Merge graph nodes that name one thing",
        description="The nodes of `merge` go into `keep`: their names become its aliases, "
        "their properties, quotes and edges are its own (edges that become one are folded, "
        "loops dropped). All of one scope.",
        request=GraphMergeSerializer,
        responses={200: GraphNodeDetailSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
)
class GraphMergeView(GraphAPIView):
    serializer_class = GraphNodeDetailSerializer

    def post(self, request: Request) -> Response:
        payload = GraphMergeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        with api_fields(keep=data["keep"], merge=data["merge"]):
            node = self.graph.merge_nodes(data["keep"], data["merge"], grants=self.grants)
        return Response(GraphNodeDetailSerializer(node, context=self.evidence_context(node)).data)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_graph_path",
        summary="A shortest path between two graph nodes",
        description="The fewest edges (at most `max_depth`, followed either way) from the "
        "source to the target; `found` false when there is none, also between scopes.",
        parameters=[GraphPathQuerySerializer],
        responses={200: GraphPathSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
)
class GraphPathView(GraphAPIView):
    serializer_class = GraphPathSerializer

    def get(self, request: Request) -> Response:
        query = GraphPathQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        with api_fields(source=params["source"], target=params["target"]):
            path = self.graph.shortest_path(
                params["source"],
                params["target"],
                max_depth=params.get("max_depth", 4),
                relations=comma_list(params.get("relations")),
                statuses=comma_list(params.get("status")) or [GraphStatus.ACTIVE],
                grants=self.grants,
            )
        if path is None:
            return Response({"found": False, "length": None, "nodes": [], "edges": []})
        return Response(
            {
                "found": True,
                "length": path.length,
                "nodes": GraphNodeSerializer(path.nodes, many=True).data,
                "edges": GraphEdgeSerializer(path.edges, many=True).data,
            }
        )


# --- edges ------------------------------------------------------------------------------


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_graph_edges_list",
        summary="List graph edges",
        description="Edges you may see, by id, page by page.",
        parameters=[GraphEdgeQuerySerializer],
        responses={200: GraphEdgePageSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
    post=extend_schema(
        operation_id="memory_graph_edges_create",
        summary="Write a graph edge",
        description="An edge between two nodes of one scope, in that scope: 201 when new, "
        "200 when merged into the edge they have of the relation. A person's edge with "
        "quotes that all hold is active; any other is suggested, for review.",
        request=GraphEdgeCreateSerializer,
        responses={
            201: GraphEdgeDetailSerializer,
            200: GraphEdgeDetailSerializer,
            400: ERROR_400,
            **COMMON_ERRORS,
        },
    ),
)
class GraphEdgeListView(GraphAPIView):
    serializer_class = GraphEdgeSerializer

    def get(self, request: Request) -> Response:
        query = GraphEdgeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        edges = self.graph.edges(
            grants=self.grants,
            node=params.get("node"),
            relation=params.get("relation"),
            status=comma_list(params.get("status")),
        )
        for name in ("agent_id", "user_id"):
            if name in params:
                edges = edges.filter(**{name: params[name]})
        found, cursor, next_url = self.page(request, edges, params)
        return Response(
            {
                "results": GraphEdgeSerializer(found, many=True).data,
                "next_cursor": cursor,
                "next": next_url,
            }
        )

    def post(self, request: Request) -> Response:
        payload = GraphEdgeCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        with api_fields(source=data["source"], target=data["target"]):
            source = self.visible_node(data["source"])
            scope = MemoryScope.of(source)
            existed = GraphEdge.objects.filter(
                source=source, target_id=data["target"], relation=normal_words(data["relation"])
            ).exists()
            edge = self.graph.add_edge(
                scope,
                source=source.pk,
                target=data["target"],
                relation=data["relation"],
                properties=data.get("properties"),
                weight=data.get("weight", 1.0),
                evidence=evidence_of(data),
                trust=self.writer_trust(),
                valid_from=data.get("valid_from"),
                valid_to=data.get("valid_to"),
                grants=self.grants,
            )
        code = status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        body = GraphEdgeDetailSerializer(edge, context=self.evidence_context(edge)).data
        return Response(body, status=code)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_graph_edges_retrieve",
        summary="Read a graph edge with its evidence",
        responses={200: GraphEdgeDetailSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
    patch=extend_schema(
        operation_id="memory_graph_edges_partial_update",
        summary="Change a graph edge",
        description="The fields given change; `evidence` replaces its quotes. Its status "
        "changes by review only.",
        request=GraphEdgeUpdateSerializer,
        responses={
            200: GraphEdgeDetailSerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409_EDGE,
            **COMMON_ERRORS,
        },
    ),
    delete=extend_schema(
        operation_id="memory_graph_edges_destroy",
        summary="Delete a graph edge with its evidence",
        responses={204: None, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class GraphEdgeDetailView(GraphAPIView):
    serializer_class = GraphEdgeDetailSerializer

    def get(self, request: Request, edge_id: str) -> Response:
        edge = self.visible_edge(edge_id)
        return Response(GraphEdgeDetailSerializer(edge, context=self.evidence_context(edge)).data)

    def patch(self, request: Request, edge_id: str) -> Response:
        edge = self.visible_edge(edge_id)
        payload = GraphEdgeUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(payload.validated_data)
        if "evidence" in data:
            data["evidence"] = evidence_of(data)
        with api_fields():
            edge = self.graph.update_edge(edge.pk, grants=self.grants, **data)
        return Response(GraphEdgeDetailSerializer(edge, context=self.evidence_context(edge)).data)

    def delete(self, request: Request, edge_id: str) -> Response:
        _delete(self.visible_edge(edge_id), self.grants)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- reviews ----------------------------------------------------------------------------


class GraphReviewView(GraphAPIView):
    """One review decision on one node or edge, an adapter of its action
    (``graph.review``)."""

    # Not "action", which drf-spectacular reads as a viewset's action name.
    decision: type[GraphNodeReview] | type[GraphEdgeReview]
    answer: type[GraphNodeSerializer] | type[GraphEdgeSerializer]

    def reason(self, request: Request) -> str:
        if not self.decision.takes_reason:
            return ""
        payload = GraphRejectSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        return str(payload.validated_data["reason"])

    def review(self, request: Request, row_id: str) -> Response:
        review = self.decision(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        review.authorize([row_id])  # 404, then 403, before the body is read
        [row] = review.execute([row_id], reason=self.reason(request))
        return Response(self.answer(row).data)


class GraphNodeReviewView(GraphReviewView):
    serializer_class = GraphNodeSerializer
    answer = GraphNodeSerializer

    def post(self, request: Request, node_id: str) -> Response:
        return self.review(request, node_id)


class GraphEdgeReviewView(GraphReviewView):
    serializer_class = GraphEdgeSerializer
    answer = GraphEdgeSerializer

    def post(self, request: Request, edge_id: str) -> Response:
        return self.review(request, edge_id)


def review_schema(
    operation: str, summary: str, answer: Any, not_reviewable: Any, request: Any = None
) -> Any:
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation,
            summary=summary,
            request=request,
            responses={
                200: answer,
                **({400: ERROR_400} if request is not None else {}),
                404: ERROR_404,
                409: not_reviewable,
                **COMMON_ERRORS,
                403: ERROR_403_REVIEW,
            },
        )
    )


@review_schema(
    "memory_graph_nodes_activate",
    f"Activate a {' or '.join(ActivateGraphNodes.statuses)} graph node",
    GraphNodeSerializer,
    ERROR_409_NODE_REVIEW,
)
class GraphNodeActivateView(GraphNodeReviewView):
    decision = ActivateGraphNodes


@review_schema(
    "memory_graph_nodes_reject",
    "Reject a graph node, with the reason",
    GraphNodeSerializer,
    ERROR_409_NODE_REVIEW,
    GraphRejectSerializer,
)
class GraphNodeRejectView(GraphNodeReviewView):
    decision = RejectGraphNodes


@review_schema(
    "memory_graph_edges_activate",
    f"Activate a {' or '.join(ActivateGraphEdges.statuses)} graph edge",
    GraphEdgeSerializer,
    ERROR_409_EDGE_REVIEW,
)
class GraphEdgeActivateView(GraphEdgeReviewView):
    decision = ActivateGraphEdges


@review_schema(
    "memory_graph_edges_reject",
    "Reject a graph edge, with the reason",
    GraphEdgeSerializer,
    ERROR_409_EDGE_REVIEW,
    GraphRejectSerializer,
)
class GraphEdgeRejectView(GraphEdgeReviewView):
    decision = RejectGraphEdges
