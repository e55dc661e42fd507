"""Threads: list, create (or upsert), read, update metadata, delete."""

from __future__ import annotations

from typing import Any

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.filters import ThreadFilterSet
from cogitator_memory.api.pagination import ThreadCursorPagination
from cogitator_memory.api.serializers.forgetting import CascadeReportSerializer
from cogitator_memory.api.serializers.threads import (
    ThreadCreateSerializer,
    ThreadSerializer,
    ThreadUpdateSerializer,
)
from cogitator_memory.api.views.base import (
    COMMON_ERRORS,
    ERROR_400,
    ERROR_404,
    ERROR_409,
    MemoryAPIView,
)
from cogitator_memory.cascade.actions import DeleteThread
from cogitator_memory.review import Via
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Thread
from cogitator_memory.threads.querysets import ThreadQuerySet


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_threads_list",
        summary="List threads",
        description="Threads you may see, the most recently updated first.",
        responses={200: ThreadSerializer(many=True), 400: ERROR_400, **COMMON_ERRORS},
    ),
    post=extend_schema(
        operation_id="memory_threads_create",
        summary="Create a thread (or update one by id)",
        request=ThreadCreateSerializer,
        responses={
            201: ThreadSerializer,
            200: ThreadSerializer,
            400: ERROR_400,
            409: ERROR_409,
            **COMMON_ERRORS,
        },
    ),
)
class ThreadListView(MemoryAPIView):
    serializer_class = ThreadSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = ThreadFilterSet
    pagination_class = ThreadCursorPagination

    def get_queryset(self) -> ThreadQuerySet:
        return Thread.objects.visible_to(self.grants)

    def get(self, request: Request) -> Response:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(ThreadSerializer(page, many=True).data)

    def post(self, request: Request) -> Response:
        payload = ThreadCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        thread_id = data.get("id")
        thread, created = services.upsert_thread(
            data["agent_id"], data["metadata"], thread_id=thread_id, grants=self.grants
        )
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(ThreadSerializer(thread).data, status=code)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_threads_retrieve",
        summary="Read a thread",
        responses={200: ThreadSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
    patch=extend_schema(
        operation_id="memory_threads_partial_update",
        summary="Update a thread's metadata",
        request=ThreadUpdateSerializer,
        responses={200: ThreadSerializer, 400: ERROR_400, 404: ERROR_404, **COMMON_ERRORS},
    ),
    delete=extend_schema(
        operation_id="memory_threads_destroy",
        summary="Delete a thread with its entries and what stands on them",
        description="The thread whole, the copies of its entries in its forks, the memory "
        "of its own scope (items, files kept for it alone), its sessions and runs, and what "
        "memory derived from its entries (MemoryCascade.delete_thread). The answer counts "
        "what went.",
        responses={200: CascadeReportSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ThreadDetailView(MemoryAPIView):
    serializer_class = ThreadSerializer

    def get(self, request: Request, thread_id: str) -> Response:
        return Response(ThreadSerializer(self.visible_thread(thread_id)).data)

    def patch(self, request: Request, thread_id: str) -> Response:
        payload = ThreadUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        thread = services.update_thread(
            thread_id, data["metadata"], replace=data["replace"], grants=self.grants
        )
        return Response(ThreadSerializer(thread).data)

    def delete(self, request: Request, thread_id: str) -> Response:
        action = DeleteThread(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        report = action.execute(thread_id)
        return Response(CascadeReportSerializer({"report": report.counts()}).data)
