"""Memory items: the list (filtered, as of a moment, page by page), one item with its
evidence, its slot's history, and the review actions activate, reject and let go.

Reviews are made by people: a logged-in user (session or token) holding the action's
permission (``cogitator_memory.activate_memoryitem``, ``reject_memoryitem``,
``let_go_memoryitem``, as in the admin), on an item their grants reach. An API key,
which acts for a program, gets 403 for every review. Each review is written to the
admin's log with who and when.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from cogitator_memory.api.serializers.errors import ErrorSerializer
from cogitator_memory.api.serializers.items import (
    ITEM_ID_MAX_LENGTH,
    ItemDetailSerializer,
    ItemHistorySerializer,
    ItemPageSerializer,
    ItemQuerySerializer,
    ItemSerializer,
    RejectSerializer,
)
from cogitator_memory.api.views.base import COMMON_ERRORS, ERROR_400, ERROR_404, MemoryAPIView
from cogitator_memory.exceptions import ItemNotFound
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.items.querysets import ItemQuerySet
from cogitator_memory.items.review import ActivateItems, ItemReview, LetGoItems, RejectItems
from cogitator_memory.items.selectors import held, page_items
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import Slot
from cogitator_memory.jsondata import storable_text
from cogitator_memory.review import Via
from cogitator_memory.threads.models import Thread

ERROR_403_REVIEW = OpenApiResponse(
    ErrorSerializer,
    description="An API key, or a user without the action's permission (review_not_permitted).",
)
ERROR_409_REVIEW = OpenApiResponse(
    ErrorSerializer,
    description="The item's status does not take this action (item_not_reviewable).",
)


class ItemAPIView(MemoryAPIView):
    def visible_items(self) -> ItemQuerySet:
        return MemoryItem.objects.visible_to(self.grants)

    def visible_item(self, item_id: str) -> MemoryItem:
        """The item if the caller's grants reach it; ``ItemNotFound`` (404) otherwise."""
        item = (
            self.visible_items().select_related("subject").filter(pk=item_id).first()
            if len(item_id) <= ITEM_ID_MAX_LENGTH and storable_text(item_id)
            else None
        )
        if item is None:
            raise ItemNotFound(item_id)
        return item


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_items_list",
        summary="List memory items",
        description="Items you may see, the most recently recorded first. With `as_of` or "
        "`known_at`, only those that held in the world at `as_of` as memory knew them at "
        "`known_at` (bitemporal): by default their active and superseded states.",
        parameters=[ItemQuerySerializer],
        responses={200: ItemPageSerializer, 400: ERROR_400, **COMMON_ERRORS},
    ),
)
class ItemListView(ItemAPIView):
    serializer_class = ItemSerializer

    def get(self, request: Request) -> Response:
        query = ItemQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params: dict[str, Any] = query.validated_data
        items = self.visible_items()
        for name in ("agent_id", "user_id", "subject_id", "attribute"):
            if name in params:
                items = items.filter(**{name: params[name]})
        if "kind" in params:
            items = items.filter(kind__in=params["kind"].split(","))
        statuses = params["status"].split(",") if "status" in params else None
        if "as_of" in params or "known_at" in params:
            items = held(
                items,
                as_of=params.get("as_of"),
                known_at=params.get("known_at"),
                statuses=statuses,
                now=timezone.now(),
            )
        elif statuses is not None:
            items = items.with_statuses(statuses)
        page = page_items(items, limit=params.get("limit"), cursor=params.get("cursor"))
        next_url = None
        if page.next_cursor:
            next_url = replace_query_param(request.build_absolute_uri(), "cursor", page.next_cursor)
        return Response(
            {
                "results": ItemSerializer(page.items, many=True).data,
                "next_cursor": page.next_cursor,
                "next": next_url,
            }
        )


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_items_retrieve",
        summary="Read a memory item with its evidence",
        responses={200: ItemDetailSerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ItemDetailView(ItemAPIView):
    serializer_class = ItemDetailSerializer

    def get(self, request: Request, item_id: str) -> Response:
        item = self.visible_item(item_id)
        thread_ids = set(
            item.evidence.filter(entry__isnull=False).values_list("entry__thread_id", flat=True)
        )
        visible = set(
            Thread.objects.visible_to(self.grants)
            .filter(pk__in=thread_ids)
            .values_list("pk", flat=True)
        )
        data = ItemDetailSerializer(item, context={"visible_threads": visible}).data
        return Response(data)


@extend_schema_view(
    get=extend_schema(
        operation_id="memory_items_history",
        summary="The history of an item's slot",
        description="Every state of the item's slot (its subject and attribute) seen from "
        "the item's scope, closed, let go and stale ones included, in the order of their "
        "validity.",
        responses={200: ItemHistorySerializer, 404: ERROR_404, **COMMON_ERRORS},
    ),
)
class ItemHistoryView(ItemAPIView):
    serializer_class = ItemSerializer

    def get(self, request: Request, item_id: str) -> Response:
        item = self.visible_item(item_id)
        states = MemoryItems().history(
            MemoryScope.of(item), Slot(item.subject_id, item.attribute), grants=self.grants
        )
        return Response({"results": ItemSerializer(states, many=True).data})


class ReviewView(ItemAPIView):
    """One review decision on one item, an adapter of its action (``items.review``)."""

    # Not "action", which drf-spectacular reads as a viewset's action name.
    decision: type[ItemReview]
    serializer_class = ItemSerializer

    def reason(self, request: Request) -> str:
        return ""

    def post(self, request: Request, item_id: str) -> Response:
        review = self.decision(request.user, grants=self.grants, via=Via.API, api_key=self.api_key)
        review.authorize([item_id])  # 404, then 403, before the body is read
        [item] = review.execute([item_id], reason=self.reason(request))
        return Response(ItemSerializer(item).data)


def review_schema(operation: str, summary: str, request: Any = None) -> Any:
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation,
            summary=summary,
            request=request,
            responses={
                200: ItemSerializer,
                **({400: ERROR_400} if request is not None else {}),
                404: ERROR_404,
                409: ERROR_409_REVIEW,
                **COMMON_ERRORS,
                403: ERROR_403_REVIEW,
            },
        )
    )


@review_schema("memory_items_activate", f"Activate a {' or '.join(ActivateItems.statuses)} item")
class ItemActivateView(ReviewView):
    decision = ActivateItems


@review_schema("memory_items_reject", "Reject an item, with the reason", RejectSerializer)
class ItemRejectView(ReviewView):
    decision = RejectItems

    def reason(self, request: Request) -> str:
        payload = RejectSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        return str(payload.validated_data["reason"])


@review_schema("memory_items_let_go", "Let an item go")
class ItemLetGoView(ReviewView):
    decision = LetGoItems
