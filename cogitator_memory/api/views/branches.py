"""Branches: read one branch, rewind, checkout, fork."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from cogitator_memory.api.serializers.entries import (
    EntrySerializer,
    PathPageSerializer,
    PathQuerySerializer,
    parse_types,
)
from cogitator_memory.api.serializers.forgetting import RewoundThreadSerializer
from cogitator_memory.api.serializers.threads import (
    CheckoutSerializer,
    ForkSerializer,
    RewindSerializer,
    ThreadSerializer,
)
from cogitator_memory.api.views.base import (
    COMMON_ERRORS,
    ERROR_400,
    ERROR_404,
    ERROR_409,
    MemoryAPIView,
)
from cogitator_memory.cascade.actions import RewindThread
from cogitator_memory.review import Via
from cogitator_memory.threads import selectors, services


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_threads_path",
        summary="Read one branch",
        description="The newest `limit` entries of the branch ending at `leaf_id` (the active "
        "leaf by default), oldest first; `next_before` pages back.",
        parameters=[PathQuerySerializer],
        responses={200: PathPageSerializer, 400: ERROR_400, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ThreadPathView(MemoryAPIView):
    serializer_class = EntrySerializer

    def get(self, request: Request, thread_id: str) -> Response:
        self.visible_thread(thread_id)
        query = PathQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        limit = params["limit"]
        # One more than asked tells whether an older part of the branch remains.
        entries = selectors.get_path(
            thread_id,
            leaf_id=params.get("leaf_id"),
            limit=limit + 1,
            before=params.get("before"),
            types=parse_types(params.get("types")),
            include_tool_calls=params["include_tool_calls"],
        )
        more = len(entries) > limit
        entries = entries[-limit:] if more else entries
        return Response(
            {
                "results": EntrySerializer(entries, many=True).data,
                "next_before": entries[0].pk if more else None,
            }
        )


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_threads_rewind",
        summary="Rewind the active branch",
        description="Moves the active leaf back to an entry of the active branch; nothing is "
        "deleted. The memory items that stood only on the entries left behind become stale "
        "(MemoryCascade.rewind), counted under `report`. An entry of another branch is "
        "refused (409): use checkout.",
        request=RewindSerializer,
        responses={
            200: RewoundThreadSerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409,
            **COMMON_ERRORS,
        },
    ),
)
class ThreadRewindView(MemoryAPIView):
    serializer_class = RewoundThreadSerializer

    def post(self, request: Request, thread_id: str) -> Response:
        payload = RewindSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        action = RewindThread(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        report = action.execute(thread_id, payload.validated_data["to_entry_id"])
        thread = self.visible_thread(thread_id)
        return Response(RewoundThreadSerializer((thread, report.counts())).data)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_threads_checkout",
        summary="Check out a branch",
        description="Makes the branch ending at `entry_id` the active one.",
        request=CheckoutSerializer,
        responses={200: ThreadSerializer, 400: ERROR_400, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ThreadCheckoutView(MemoryAPIView):
    serializer_class = ThreadSerializer

    def post(self, request: Request, thread_id: str) -> Response:
        payload = CheckoutSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        thread = services.checkout(
            thread_id, payload.validated_data["entry_id"], grants=self.grants
        )
        return Response(ThreadSerializer(thread).data)


@extend_schema_view(
    post=extend_schema(
        operation_id="memory_threads_fork",
        summary="Fork a thread",
        description="Copies the branch up to `at_entry_id` into a new thread of the same agent.",
        request=ForkSerializer,
        responses={
            201: ThreadSerializer,
            400: ERROR_400,
            404: ERROR_404,
            409: ERROR_409,
            **COMMON_ERRORS,
        },
    ),
)
class ThreadForkView(MemoryAPIView):
    serializer_class = ThreadSerializer

    def post(self, request: Request, thread_id: str) -> Response:
        payload = ForkSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data: dict[str, Any] = payload.validated_data
        fork = services.fork_thread(
            thread_id, data["at_entry_id"], data.get("new_thread_id"), grants=self.grants
        )
        return Response(ThreadSerializer(fork).data, status=status.HTTP_201_CREATED)
