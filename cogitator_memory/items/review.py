"""Review of memory items by people: the actions, the statuses each applies to, the
permission each takes, and the one call the API makes for a single item (the admin's
list and page run the same ``MemoryItems`` calls for many)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from cogitator_memory.exceptions import ItemNotFound, ItemNotReviewable
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems

__all__ = [
    "ACTIVATABLE",
    "LETTABLE",
    "REJECTABLE",
    "REVIEW_ACTIONS",
    "ReviewAction",
    "may_review",
    "review_item",
]

ACTIVATABLE = (ItemStatus.SUGGESTED, ItemStatus.STALE)
REJECTABLE = (ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)
LETTABLE = REJECTABLE


@dataclass(frozen=True)
class ReviewAction:
    name: str
    allowed: tuple[str, ...]
    run: Callable[[MemoryItems, list[str], str, Grants | None], list[str]]

    @property
    def permission(self) -> str:
        """The Django permission a reviewer needs (one per action, see MemoryItem.Meta)."""
        return f"cogitator_memory.{self.name}_memoryitem"


REVIEW_ACTIONS = {
    action.name: action
    for action in (
        ReviewAction(
            "activate",
            ACTIVATABLE,
            lambda items, ids, reason, access: items.activate(ids, grants=access),
        ),
        ReviewAction(
            "reject",
            REJECTABLE,
            lambda items, ids, reason, access: items.reject(ids, reason, grants=access),
        ),
        ReviewAction(
            "let_go",
            LETTABLE,
            lambda items, ids, reason, access: items.let_go(ids, grants=access),
        ),
    )
}


def may_review(user: Any, action: str) -> bool:
    """Whether ``user`` holds the permission of the review ``action``."""
    return bool(user is not None and user.has_perm(REVIEW_ACTIONS[action].permission))


@transaction.atomic
def review_item(
    item_id: str, action: str, *, grants: Grants | None, reason: str = ""
) -> MemoryItem:
    """Run one review on one item the caller may see and return it as it now stands.
    Raises ``ItemNotFound``, ``ItemNotReviewable`` for a status the action does not take,
    and ``InvalidItem`` for a rejection without a reason."""
    review = REVIEW_ACTIONS[action]
    if not review.run(MemoryItems(), [item_id], reason, grants):
        items = (
            MemoryItem.objects.all() if grants is None else MemoryItem.objects.visible_to(grants)
        )
        item = items.filter(pk=item_id).first()
        if item is None:
            raise ItemNotFound(item_id)
        raise ItemNotReviewable(
            item_id, item.status, action.replace("_", " "), [str(s) for s in review.allowed]
        )
    return MemoryItem.objects.select_related("subject").get(pk=item_id)
