"""The pre-turn brief of a turn, as the caller's grants see the memory it is drawn from."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.serializers.brief import BriefRequestSerializer, BriefSerializer
from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, ERROR_404, MemoryAPIView
from cogitator_memory.upkeep.brief import brief_block
from cogitator_memory.upkeep.brief_turn import brief_for_turn

ERROR_409_NO_MODEL = OpenApiResponse(
    ErrorSerializer, description="No model is configured: the brief is off (llm_unavailable)."
)
ERROR_503_MODEL = OpenApiResponse(
    ErrorSerializer, description="The model failed; try again later (llm_failed)."
)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_brief",
        summary="Brief a turn",
        description="Up to `max_cards` cards (constraint, knowledge, consequence, "
        "open_thread) a model draws for the turn from what recall finds in the memory "
        "the caller's grants reach (as `recall/` finds it), each kept only when its quote "
        "holds word for word in the turn or item it names, and the block a turn's memory "
        "context gets for them. No model call when recall finds nothing. A scope your "
        "grants do not reach is refused (403) before anything is looked up.",
        request=BriefRequestSerializer,
        responses={
            200: BriefSerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409_NO_MODEL,
            503: ERROR_503_MODEL,
            **COMMON_ERRORS,
        },
    ),
)
class BriefView(MemoryAPIView):
    serializer_class = BriefSerializer

    def post(self, request: Request) -> Response:
        body = BriefRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        params: dict[str, Any] = body.validated_data
        cards = brief_for_turn(
            agent_id=params["agent_id"],
            user_id=params.get("user_id"),
            thread_id=params.get("thread_id"),
            input=params["input"],
            max_cards=params["max_cards"],
            grants=self.grants,
            as_of=params.get("as_of"),
            time_zone=params["time_zone"],
        )
        return Response(BriefSerializer((cards, brief_block(cards))).data)
