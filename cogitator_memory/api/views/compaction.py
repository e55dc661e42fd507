"""Compaction through the API: ``POST`` compacts a thread in the background (202, the run
to poll), ``GET`` on the run tells its status, and the compacted history is the thread as
a reader gets it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.serializers.compaction import (
    CompactedHistoryQuerySerializer,
    CompactedHistorySerializer,
    CompactionRunSerializer,
)
from cogitator_memory.api.serializers.entries import EntrySerializer
from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, ERROR_404, MemoryAPIView
from cogitator_memory.api.views.runs import RequestRunView, RunStatusView
from cogitator_memory.compaction.history import read_compacted_history
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.compaction.runs import get_compaction_run, request_compaction

ERROR_409_NO_MODEL = OpenApiResponse(
    ErrorSerializer, description="No model is configured: compaction is off (llm_unavailable)."
)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_threads_compact",
        summary="Compact the thread in the background",
        description="Summarizes the active branch's entries since the last compaction up "
        "to the kept tail, with the COMPACTION settings, and appends a compaction entry at "
        "the end of the active branch; nothing is deleted. 202 with the run to poll (its id "
        "is the task id, its URL in Location). While a compaction of the thread is queued "
        "or running, that run is the answer.",
        request=None,
        responses={
            202: CompactionRunSerializer,
            404: ERROR_404,
            409: ERROR_409_NO_MODEL,
            **COMMON_ERRORS,
        },
    ),
)
class ThreadCompactView(RequestRunView):
    serializer_class = CompactionRunSerializer
    run_model = CompactionRun
    run_url_name = "cogitator_memory_api:compaction-run"

    def request_run(self, thread_id: str) -> CompactionRun:
        run, _created = request_compaction(thread_id, grants=self.grants)
        return run


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_compactions_retrieve",
        summary="The status of a compaction run",
        responses={200: CompactionRunSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class CompactionRunView(RunStatusView):
    serializer_class = CompactionRunSerializer

    def get_run(self, run_id: str) -> CompactionRun:
        return get_compaction_run(run_id, grants=self.grants)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_threads_compacted_history",
        summary="Read the thread as compacted",
        description="The branch ending at `leaf_id` (the active leaf by default) as a "
        "reader gets it: the newest compaction entry (its event.summary first), the "
        "entries it kept and everything after it. The thread's entries all stay readable "
        "through entries/ and path/.",
        parameters=[CompactedHistoryQuerySerializer],
        responses={
            200: CompactedHistorySerializer,
            400: ERROR_400,
            404: ERROR_404,
            **COMMON_ERRORS,
        },
    ),
)
class ThreadCompactedHistoryView(MemoryAPIView):
    serializer_class = EntrySerializer

    def get(self, request: Request, thread_id: str) -> Response:
        self.visible_thread(thread_id)
        query = CompactedHistoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        history = read_compacted_history(
            thread_id, leaf_id=params.get("leaf_id"), grants=self.grants
        )
        return Response({"results": EntrySerializer(history, many=True).data})
