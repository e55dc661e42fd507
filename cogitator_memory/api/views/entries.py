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
    parse_types,
)
from cogitator_memory.api.serializers.forgetting import (
    CascadeReportSerializer,
    EntryDeleteQuerySerializer,
    RedactedEntrySerializer,
    RedactWithRepliesSerializer,
)
from cogitator_memory.api.views.base import (
    COMMON_ERRORS,
    ERROR_400,
    ERROR_404,
    ERROR_409,
    MemoryAPIView,
)
from cogitator_memory.cascade.actions import DeleteEntries, RedactEntries
from cogitator_memory.exceptions import RedactionRefused
from cogitator_memory.review import Via
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
        summary="Delete an entry with its replies and what stands on them",
        description="A user message takes its replies (the entries after it on every "
        "branch up to the next user message) unless `keep_replies=true`; the entries' "
        "copies in forks and what memory derived from them (items, summaries, vectors, "
        "file versions, ...) go too (MemoryCascade.delete_entries). The children of what "
        "went move to the nearest ancestor that stays. The answer counts what went.",
        parameters=[EntryDeleteQuerySerializer],
        responses={200: CascadeReportSerializer, 400: ERROR_400, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class EntryDetailView(MemoryAPIView):
    serializer_class = EntrySerializer

    def get(self, request: Request, entry_id: str) -> Response:
        return Response(EntrySerializer(self.visible_entry(entry_id)).data)

    def delete(self, request: Request, entry_id: str) -> Response:
        query = EntryDeleteQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        action = DeleteEntries(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        report = action.execute([entry_id], keep_replies=query.validated_data["keep_replies"])
        return Response(CascadeReportSerializer({"report": report.counts()}).data)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_entries_redact",
        summary="Redact an entry with its replies",
        description="Replaces what the entry said with [redacted] and keeps its place; a user "
        "message's replies are redacted too unless `keep_replies` is true (events among them "
        "are deleted), and so are the copies in forks, while what memory derived from them "
        "goes (MemoryCascade.redact_entries). Session events are refused (409): delete them "
        "instead. The answer is the entry, with what went counted under `report`.",
        request=RedactWithRepliesSerializer,
        responses={
            200: RedactedEntrySerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409,
            **COMMON_ERRORS,
        },
    ),
)
class EntryRedactView(MemoryAPIView):
    serializer_class = RedactedEntrySerializer

    def post(self, request: Request, entry_id: str) -> Response:
        payload = RedactWithRepliesSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        entry = self.visible_entry(entry_id)
        if entry.is_event:
            # Named itself, an event is refused; among the replies, it is deleted.
            raise RedactionRefused(entry.pk, entry.type)
        action = RedactEntries(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        report = action.execute(
            [entry.pk],
            reason=data.get("reason"),
            at=data.get("at"),
            keep_replies=data["keep_replies"],
        )
        entry = self.visible_entry(entry.pk)
        return Response(RedactedEntrySerializer((entry, report.counts())).data)
