"""Extraction of a thread's memory items, asked for through the API: ``POST`` starts it
in the background (202, the run to poll), ``GET`` on the run tells its status."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.items import ExtractionRunSerializer
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_404
from cogitator_memory.api.views.runs import RequestRunView, RunStatusView
from cogitator_memory.items.models import ExtractionRun
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
class ThreadExtractView(RequestRunView):
    serializer_class = ExtractionRunSerializer
    run_model = ExtractionRun
    run_url_name = "cogitator_memory_api:extraction-run"

    def request_run(self, thread_id: str) -> ExtractionRun:
        run, _created = request_extraction(thread_id, grants=self.grants)
        return run


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_extractions_retrieve",
        summary="The status of an extraction run",
        responses={200: ExtractionRunSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ExtractionRunView(RunStatusView):
    serializer_class = ExtractionRunSerializer

    def get_run(self, run_id: str) -> ExtractionRun:
        return get_run(run_id, grants=self.grants)
