"""Extraction of a thread's memory items, asked for through the API: ``POST`` starts it
in the background (202, the run to poll), ``GET`` on the run tells its status."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.items import ExtractionRunSerializer
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_404, MemoryAPIView
from cogitator_memory.items.runs import get_run, request_extraction

ERROR_409_NO_MODEL = OpenApiResponse(
    ErrorSerializer, description="No model is configured: extraction is off (llm_unavailable)."
)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_threads_extract",
        summary="Extract the thread's memory items in the background",
        description="Starts reading the thread's active branch from where the last run "
        "stopped, window by window; new items are written as the EXTRACTION mode says "
        "(shadow: suggested, for review). 202 with the run to poll (its id is the task "
        "id, its URL in Location). While a run of the thread is queued or running, that "
        "run is the answer.",
        request=None,
        responses={
            202: ExtractionRunSerializer,
            404: ERROR_404,
            409: ERROR_409_NO_MODEL,
            **COMMON_ERRORS,
        },
    ),
)
class ThreadExtractView(MemoryAPIView):
    serializer_class = ExtractionRunSerializer

    def post(self, request: Request, thread_id: str) -> Response:
        run, _created = request_extraction(thread_id, scope=self.scope)
        location = reverse("cogitator_memory_api:extraction-run", args=[run.pk], request=request)
        return Response(
            ExtractionRunSerializer(run).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": location},
        )


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_extractions_retrieve",
        summary="The status of an extraction run",
        responses={200: ExtractionRunSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ExtractionRunView(MemoryAPIView):
    serializer_class = ExtractionRunSerializer

    def get(self, request: Request, run_id: str) -> Response:
        return Response(ExtractionRunSerializer(get_run(run_id, scope=self.scope)).data)
