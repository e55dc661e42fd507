"""The review decisions on memory items, one action class each: ``ActivateItems``,
``RejectItems``, ``LetGoItems`` (``cogitator_memory.review.ReviewAction``).

Each owns its permission (``cogitator_memory.activate_memoryitem``, ``reject_memoryitem``,
``let_go_memoryitem``), the statuses it applies to (listed here only: the transitions of
``MemoryItems`` take them from the action), the ``MemoryItems`` call with the caller's
grants, the reason rule of a rejection, and the admin log. The admin and the API are
adapters of them::

    ActivateItems(request.user, grants=grants, via=Via.ADMIN).execute(ids)
"""

from __future__ import annotations

from typing import Any

from cogitator_memory.exceptions import InvalidItem, ItemNotFound, ItemNotReviewable
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.querysets import ItemQuerySet
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.review import ReviewAction, Via

__all__ = ["ActivateItems", "ItemReview", "LetGoItems", "RejectItems"]


class ItemReview(ReviewAction[MemoryItem]):
    """A review decision on memory items. ``items`` is the ``MemoryItems`` that makes
    it (tests pass one with their own clock)."""

    model = MemoryItem
    not_found = ItemNotFound
    not_reviewable = ItemNotReviewable
    invalid = InvalidItem

    def __init__(
        self,
        user: Any,
        *,
        grants: Grants,
        via: Via,
        api_key: object | None = None,
        items: MemoryItems | None = None,
    ) -> None:
        super().__init__(user, grants=grants, via=via, api_key=api_key)
        self.items = items or MemoryItems()

    def queryset(self) -> ItemQuerySet:
        return MemoryItem.objects.visible_to(self.grants).select_related("subject")


class ActivateItems(ItemReview):
    """A reviewer's approval: suggested (or stale) items become active."""

    name = "activate"
    done = "activated"
    statuses = (ItemStatus.SUGGESTED, ItemStatus.STALE)

    def transition(self, ids: list[str], reason: str) -> list[str]:
        return self.items.activate(ids, grants=self.grants, from_statuses=self.statuses)


class RejectItems(ItemReview):
    """A reviewer's refusal, with the reason: the items become stale, out of every
    context, kept for the record with the reason."""

    name = "reject"
    done = "rejected"
    statuses = (ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)
    takes_reason = True

    def transition(self, ids: list[str], reason: str) -> list[str]:
        return self.items.reject(ids, reason, grants=self.grants, from_statuses=self.statuses)


class LetGoItems(ItemReview):
    """Memory lets the items go: they keep their place in their slot's timeline and
    leave every context."""

    name = "let_go"
    done = "let go"
    statuses = (ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)

    def transition(self, ids: list[str], reason: str) -> list[str]:
        return self.items.let_go(ids, grants=self.grants, from_statuses=self.statuses)
