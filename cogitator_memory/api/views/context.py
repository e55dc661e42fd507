"""A context built for a thread, and recall for a turn, as the caller's grants see them.

Both read only: the caller's scope decides which thread may be built from and which
memory items are found; the thread's agent and user are the run's.
"""

from __future__ import annotations

from typing import Any, cast

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory import policy
from cogitator_memory.api.serializers.context import (
    BuiltContextSerializer,
    ContextRequestSerializer,
    RecallRequestSerializer,
    RetrievalSerializer,
)
from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.views.base import (
    COMMON_ERRORS,
    ERROR_400,
    ERROR_404,
    MemoryAPIView,
)
from cogitator_memory.api.views.search import shared_embeddings_searchable
from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import (
    ContextBuilderConfig,
    ContextBuilderDeps,
    Strategy,
    default_strategy,
)
from cogitator_memory.context.graph_source import MemoryGraphContext
from cogitator_memory.exceptions import ThreadNotFound
from cogitator_memory.grants import MemoryScope
from cogitator_memory.llm.registry import require_summarizer
from cogitator_memory.recall.retriever import MemoryRetriever
from cogitator_memory.threads.selectors import entry_in_thread
from cogitator_memory.upkeep.brief import MemoryBriefer
from cogitator_memory.upkeep.brief_turn import BRIEF_WORK
from cogitator_memory.upkeep.observations import MemoryObservations

ERROR_409_NO_BRIEF_MODEL = OpenApiResponse(
    ErrorSerializer, description="No model is configured: the brief is off (llm_unavailable)."
)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_context_build",
        summary="Build a thread's context",
        description="The context a model would get for the thread's next turn: the system "
        "message, the summary and history the budget keeps, and the memory context (facts, "
        "recall, graph context) sent with the input, with tokens per partition and every "
        "block left out and why. Parts that fail to load are left out and listed in `errors`. With "
        "`brief_cards`, a pre-turn brief of what a hybrid build recalls goes first in the "
        "memory context; 409 when no model is configured for it.",
        request=ContextRequestSerializer,
        responses={
            200: BuiltContextSerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409_NO_BRIEF_MODEL,
            **COMMON_ERRORS,
        },
    ),
)
class ContextView(MemoryAPIView):
    serializer_class = BuiltContextSerializer

    def post(self, request: Request) -> Response:
        body = ContextRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        params: dict[str, Any] = body.validated_data
        thread = self.visible_thread(params["thread_id"])
        if "leaf_id" in params:
            entry_in_thread(params["leaf_id"], thread.pk, field="leaf_id")
        config = ContextBuilderConfig(
            max_tokens=params["max_tokens"],
            reserve_tokens=params.get("reserve_tokens"),
            strategy=cast("Strategy", params.get("strategy") or default_strategy()),
            include_facts=params["include_facts"],
            include_semantic_context=params["include_semantic_context"],
            include_graph_context=params["include_graph_context"],
            graph_context_options=params["graph_context_options"],
            partitions=params["partitions"],
            time_zone=params["time_zone"],
        )
        briefer = None
        if params["brief_cards"]:
            # Asked for by name: without a model the answer says so, as extraction's does.
            summarize = require_summarizer(BRIEF_WORK)
            briefer = MemoryBriefer(summarize, max_cards=params["brief_cards"])
        # Shared embeddings (of no agent) only where the server lets API searches see them.
        # Observations of the entities the turn names come from memory's own files.
        deps = ContextBuilderDeps(
            include_shared=shared_embeddings_searchable(),
            observations=MemoryObservations(),
            graph=MemoryGraphContext(),
            briefer=briefer,
        )
        built = ContextBuilder(config, deps).build(
            thread_id=thread.pk,
            agent_id=thread.agent_id,
            user_id=thread.user_id,
            system_prompt=params.get("system_prompt") or None,
            pinned=params["pinned"],
            index=params.get("index") or None,
            brief=params.get("brief") or None,
            current_input=params.get("current_input") or None,
            leaf_id=params.get("leaf_id"),
            as_of=params.get("as_of"),
            grants=self.grants,
        )
        return Response(BuiltContextSerializer(built).data)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_recall",
        summary="Recall for a turn",
        description="How the turn is read (small talk is not searched; the kind of question; "
        "the time it names) and the older turns of the thread's branch and the memory items "
        "the run sees that match it, best first, each with the channels that found it and "
        "their ranks and scores. Without `thread_id`, the items of `agent_id` (and "
        "`user_id`) only. A scope your grants do not reach is refused (403) before "
        "anything is looked up.",
        request=RecallRequestSerializer,
        responses={
            200: RetrievalSerializer,
            400: ERROR_400,
            404: ERROR_404,
            **COMMON_ERRORS,
        },
    ),
)
class RecallView(MemoryAPIView):
    serializer_class = RetrievalSerializer

    def post(self, request: Request) -> Response:
        body = RecallRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        params: dict[str, Any] = body.validated_data
        agent_id, user_id = params["agent_id"], params.get("user_id")
        # Refused before anything is looked up, so a caller learns nothing of memory its
        # grants do not reach.
        policy.require_read(self.grants, agent_id, user_id, user_field="user_id")
        options: dict[str, Any] = {}
        if "thread_id" in params:
            thread = self.visible_thread(params["thread_id"])
            if thread.agent_id != agent_id or (user_id is not None and thread.user_id != user_id):
                raise ThreadNotFound(thread.pk)
            scope = MemoryScope(agent_id, user_id=thread.user_id, thread_id=thread.pk)
            options = {"thread_id": thread.pk}
        else:
            scope = MemoryScope(agent_id, user_id=user_id)
        retrieval = MemoryRetriever().retrieve(
            input=params["input"],
            anchor=params.get("as_of") or timezone.now(),
            time_zone=params["time_zone"],
            scope=scope,
            grants=self.grants,
            limit=params["limit"],
            **options,
        )
        return Response(RetrievalSerializer(retrieval).data)
