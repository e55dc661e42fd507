"""Entries: a thread's entries (list, add), one entry (read, delete), redaction."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.serializers.entries import (
    EntryCreateSerializer,
    EntryListQuerySerializer,
    EntryPageSerializer,
    EntrySerializer,
    RedactSerializer,
    parse_types,
)
from cogitator_memory.api.views.base import (
    COMMON_ERRORS,
    ERROR_400,
    ERROR_404,
    ERROR_409,
    MemoryAPIView,
)
from cogitator_memory.exceptions import EntryNotFound
from cogitator_memory.threads import selectors, services


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_threads_entries_list",
        summary="List a thread's entries (every branch)",
        description="The newest `limit` entries older than `cursor`, oldest first. Only "
        "message and tool_result entries unless `types` asks for more.",
        parameters=[EntryListQuerySerializer],
        responses={200: EntryPageSerializer, 400: ERROR_400, 404: ERROR_404, **COMMON_ERRORS},
    ),
    post=extend_schema(
        operation_id="memory_threads_entries_create",
        summary="Add an entry",
        description="After the active leaf by default; `parent_id` writes on another branch.",
        request=EntryCreateSerializer,
        responses={201: EntrySerializer, 400: ERROR_400, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ThreadEntriesView(MemoryAPIView):
    serializer_class = EntrySerializer

    def get(self, request: Request, thread_id: str) -> Response:
        self.visible_thread(thread_id)
        query = EntryListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        page = selectors.page_entries(
            thread_id,
            limit=params["limit"],
            cursor=params.get("cursor"),
            types=parse_types(params.get("types")),
            before=params.get("before"),
            after=params.get("after"),
            include_tool_calls=params["include_tool_calls"],
        )
        return Response(
            {
                "results": EntrySerializer(page.entries, many=True).data,
                "next_cursor": page.next_cursor,
            }
        )

    def post(self, request: Request, thread_id: str) -> Response:
        payload = EntryCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(payload.validated_data)
        if "parent_id" not in data:
            data["parent_id"] = services.UNSET
        entry = services.add_entry(thread_id, **data, grants=self.grants)
        return Response(EntrySerializer(entry).data, status=status.HTTP_201_CREATED)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_entries_retrieve",
        summary="Read an entry",
        responses={200: EntrySerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
    delete=extend_schema(
        operation_id="memory_entries_destroy",
        summary="Delete an entry (its children move to its parent)",
        responses={204: None, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class EntryDetailView(MemoryAPIView):
    serializer_class = EntrySerializer

    def get(self, request: Request, entry_id: str) -> Response:
        return Response(EntrySerializer(self.visible_entry(entry_id)).data)

    def delete(self, request: Request, entry_id: str) -> Response:
        services.delete_entry(entry_id, grants=self.grants)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_entries_redact",
        summary="Redact an entry",
        description="Replaces what the entry said with [redacted] and keeps its place. Session "
        "events are refused (409): delete them instead.",
        request=RedactSerializer,
        responses={
            200: EntrySerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409,
            **COMMON_ERRORS,
        },
    ),
)
class EntryRedactView(MemoryAPIView):
    serializer_class = EntrySerializer

    def post(self, request: Request, entry_id: str) -> Response:
        payload = RedactSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        entry = services.redact_entry(
            entry_id, at=data.get("at"), reason=data.get("reason"), grants=self.grants
        )
        if entry is None:
            raise EntryNotFound(entry_id)
        return Response(EntrySerializer(entry).data)
