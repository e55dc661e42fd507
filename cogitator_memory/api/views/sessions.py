"""Channel sessions: the list (by user, agent and status, page by page), get-or-create by
key, and one session. A caller sees and creates the sessions its grants reach (the
session's agent and user, as for its thread)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from cogitator_memory.api.serializers.sessions import (
    SessionCreateSerializer,
    SessionPageSerializer,
    SessionQuerySerializer,
    SessionSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, ERROR_404, MemoryAPIView
from cogitator_memory.sessions.services import SessionManager


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_sessions_list",
        summary="List channel sessions",
        description="Sessions you may see, of one user or of all, the most recently active first.",
        parameters=[SessionQuerySerializer],
        responses={200: SessionPageSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
    post=extend_schema(
        operation_id="memory_sessions_get_or_create",
        summary="Get the session of a user, channel and agent, or create it",
        description="The one session (and its thread) of the key: 201 when this call "
        "created it, 200 when it existed. Using a session marks it active.",
        request=SessionCreateSerializer,
        responses={
            201: SessionSerializer,
            200: SessionSerializer,
            400: ERROR_400,
            **COMMON_ERRORS,
        },
    ),
)
class SessionListView(MemoryAPIView):
    serializer_class = SessionSerializer

    def get(self, request: Request) -> Response:
        query = SessionQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        page = SessionManager().list(
            params.get("user_id"),
            params.get("status"),
            agent_id=params.get("agent_id"),
            limit=params.get("limit"),
            cursor=params.get("cursor"),
            grants=self.grants,
        )
        next_url = None
        if page.next_cursor:
            next_url = replace_query_param(request.build_absolute_uri(), "cursor", page.next_cursor)
        return Response(
            {
                "results": SessionSerializer(page.sessions, many=True).data,
                "next_cursor": page.next_cursor,
                "next": next_url,
            }
        )

    def post(self, request: Request) -> Response:
        payload = SessionCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        session, created = SessionManager().get_or_create(
            data["user_id"],
            data["channel_type"],
            data["channel_id"],
            data["agent_id"],
            grants=self.grants,
        )
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(SessionSerializer(session).data, status=code)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_sessions_retrieve",
        summary="Read a channel session",
        responses={200: SessionSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class SessionDetailView(MemoryAPIView):
    serializer_class = SessionSerializer

    def get(self, request: Request, session_id: str) -> Response:
        return Response(
            SessionSerializer(SessionManager().get(session_id, grants=self.grants)).data
        )
