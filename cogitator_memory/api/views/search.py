"""Search of the embeddings the caller may see: by keyword, by vector, or both fused.

The scope is the caller's grants: the embeddings of its agents (only its users' where a
grant names users). Embeddings of no agent, user or thread (shared documents, which the
specification lets every agent see) are left out unless
``COGITATOR_MEMORY["EMBEDDINGS"]["API_SEARCH_SHARED"]`` is true: the API cannot tell
who wrote a row without an owner, nor whether every principal should read it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.search import (
    SearchHitSerializer,
    SearchQuerySerializer,
    SearchResultsSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, MemoryAPIView
from cogitator_memory.conf import memory_settings
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.search.bm25 import keyword_search
from cogitator_memory.search.hybrid import KEYWORD, VECTOR, hybrid_search, semantic_search

SHARED_SETTING = "API_SEARCH_SHARED"


ERROR_409 = OpenApiResponse(
    ErrorSerializer,
    description="mode=vector without an embedding service (embedding_service_unavailable) "
    "or without vectors of the query's size (vector_search_unavailable); a store with no "
    "keyword search (keyword_search_unavailable).",
)
ERROR_503 = OpenApiResponse(
    ErrorSerializer,
    description="mode=vector and the embedding service failed (embedding_service_failed).",
)


def shared_embeddings_searchable() -> bool:
    """Whether API searches also return embeddings of no agent, user or thread."""
    return bool(memory_settings.EMBEDDINGS.get(SHARED_SETTING, False))


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_search",
        summary="Search embeddings",
        description="The embeddings you may see that best match `q`: by BM25 over their "
        "content (`keyword`), by the similarity of their vectors to the embedding of `q` "
        "(`vector`), or both fused by reciprocal rank (`hybrid`, the default, which searches "
        "by keyword alone where no embedding service is configured). Only embeddings of your "
        "grants' agents (and users, where a grant names users); shared embeddings of no "
        "agent only where the server allows them.",
        parameters=[SearchQuerySerializer],
        responses={
            200: SearchResultsSerializer,
            400: ERROR_400,
            409: ERROR_409,
            503: ERROR_503,
            **COMMON_ERRORS,
        },
    ),
)
class SearchView(MemoryAPIView):
    serializer_class = SearchHitSerializer

    def get(self, request: Request) -> Response:
        query = SearchQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        options: dict[str, Any] = {
            "limit": params["limit"],
            "filter": EmbeddingFilter(
                agent_id=params.get("agent_id"),
                thread_id=params.get("thread_id"),
                user_id=params.get("user_id"),
                source_type=params.get("source_type"),
                index=params.get("index"),
            ),
            "grants": self.grants,
            "include_shared": shared_embeddings_searchable(),
        }
        mode = params["mode"]
        if mode == KEYWORD:
            hits = keyword_search(params["q"], **options)
            channels = [KEYWORD]
        elif mode == VECTOR:
            # A failing provider is a 503 (ServiceFailed), its answer logged.
            hits = semantic_search(params["q"], **options)
            channels = [VECTOR]
        else:
            found = hybrid_search(params["q"], **options)
            hits, channels = found.hits, list(found.channels)
        return Response(
            {
                "mode": mode,
                "channels": channels,
                "results": SearchHitSerializer(hits, many=True).data,
            }
        )
