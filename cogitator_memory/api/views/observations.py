"""Observations of entities: those of exactly one scope, with the items they stand on.

Memory writes them itself between runs; here they are only read. A scope the principal's
grants do not reach reads as one without observations.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.serializers.observations import (
    ObservationListSerializer,
    ObservationQuerySerializer,
    ObservationSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, MemoryAPIView
from cogitator_memory.upkeep.observations import MemoryObservations


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_observations_list",
        summary="List the observations of a scope",
        description="What a model made of the facts about each entity of exactly the scope "
        "(`agent_id`, and optionally `user_id`, `project_id`, `thread_id`; not the "
        "observations shared wider), each with the memory items its statements stand on, "
        "the most recently written first. Only versions memory or a person wrote are "
        "observations. A scope your grants do not reach lists none.",
        parameters=[ObservationQuerySerializer],
        responses={200: ObservationListSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
)
class ObservationListView(MemoryAPIView):
    serializer_class = ObservationSerializer

    def get(self, request: Request) -> Response:
        query = ObservationQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        scope = query.memory_scope()
        if not self.reaches(scope):
            return Response({"results": []})
        found = MemoryObservations().read(scope, grants=self.grants, exact=True)
        return Response({"results": ObservationSerializer(found, many=True).data})
