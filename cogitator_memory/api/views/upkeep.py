"""Upkeep between runs, asked for through the API: ``POST`` on observations' refresh or on
consolidation starts it in the background for one scope (202, the run to poll, its URL in
Location), ``GET`` on the run tells its status and what it did. Within the caller's
grants: a scope they do not reach is 403, a run of one is 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.upkeep import UpkeepRunSerializer, UpkeepScopeSerializer
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, ERROR_404, MemoryAPIView
from cogitator_memory.llm.registry import require_summarizer
from cogitator_memory.upkeep.passes import get_visible_upkeep_run, request_upkeep
from cogitator_memory.upkeep.records import UpkeepWork

ERROR_409_NO_MODEL = OpenApiResponse(
    ErrorSerializer, description="No model is configured: upkeep is off (llm_unavailable)."
)


def _request_description(what: str) -> str:
    return (
        f"{what} 202 with the run to poll (its URL in Location); while a run of the same "
        "work is queued for the scope, that run is the answer. The scope is exact: an "
        "agent, and optionally a user, a project and a thread."
    )


class _RequestUpkeepView(MemoryAPIView):
    # Starts upkeep of one work on the scope the body names.

    serializer_class = UpkeepRunSerializer
    work: str

    def post(self, request: Request) -> Response:
        payload = UpkeepScopeSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        # Refused before a run is written: a run that could only fail is not queued.
        require_summarizer("Upkeep")
        run, _created = request_upkeep(
            payload.memory_scope(),
            work=self.work,
            grants=self.grants,
            requested_by=request.user if request.user.is_authenticated else None,
        )
        location = reverse("cogitator_memory_api:upkeep-run", args=[run.pk], request=request)
        data: dict[str, Any] = UpkeepRunSerializer(run).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": location})


_REQUEST_RESPONSES = {
    202: UpkeepRunSerializer,
    400: ERROR_400,
    409: ERROR_409_NO_MODEL,
    **COMMON_ERRORS,
}


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_observations_refresh",
        summary="Refresh the scope's observations in the background",
        description=_request_description(
            "Asks the model again about the entities whose facts changed since their "
            "observation was written (the newest first, UPKEEP['MAX_ENTITIES'] a run), and "
            "deletes the observations of entities left with too few facts."
        ),
        request=UpkeepScopeSerializer,
        responses=_REQUEST_RESPONSES,
    ),
)
class ObservationsRefreshView(_RequestUpkeepView):
    work = UpkeepWork.OBSERVATIONS


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_consolidation_create",
        summary="Consolidate the scope in the background",
        description=_request_description(
            "Marks stale the active items that repeat or contradict another (dedupe, going "
            "on from where the scope's last dedupe stopped), then folds the scope's new "
            "active lessons into the playbook, or its draft in shadow mode "
            "(UPKEEP['PLAYBOOK_MODE'])."
        ),
        request=UpkeepScopeSerializer,
        responses=_REQUEST_RESPONSES,
    ),
)
class ConsolidationView(_RequestUpkeepView):
    work = UpkeepWork.CONSOLIDATION


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_upkeep_runs_retrieve",
        summary="The status of an upkeep run",
        responses={200: UpkeepRunSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class UpkeepRunView(MemoryAPIView):
    serializer_class = UpkeepRunSerializer

    def get(self, request: Request, run_id: str) -> Response:
        run = get_visible_upkeep_run(run_id, grants=self.grants)
        return Response(UpkeepRunSerializer(run).data)
