"""Reading memory items page by page, and as they stood at a moment.

``held`` is the bitemporal reading of ``MemoryItems.query``: the items that held in the
world ``as_of`` as memory knew them ``known_at``. ``page_items`` pages any item queryset,
newest recorded first, by keyset on (recorded_at, id): a page never repeats or skips an
item, also when items share a moment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connections
from django.db.models import Q, prefetch_related_objects

from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.querysets import ItemQuerySet, valid_as_known_q
from cogitator_memory.items.rules import ItemRules
from cogitator_memory.items.statements import Slot
from cogitator_memory.limits import page_limit
from cogitator_memory.threads.selectors import MOMENT_PART, decode_keyset, encode_keyset

__all__ = [
    "DEFAULT_HELD_STATUSES",
    "ITEM_CURSOR_PATTERN",
    "ItemPage",
    "ItemReads",
    "held",
    "page_items",
]

# What a reading of a moment returns unless told: the states of slots, current or closed.
DEFAULT_HELD_STATUSES = (ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)
ITEM_ID_PART = r"[A-Za-z0-9_.:-]{1,64}"
# "<microseconds since the epoch>~<item id>": recorded_at and id of the last item seen.
ITEM_CURSOR_PATTERN = re.compile(rf"^{MOMENT_PART}~({ITEM_ID_PART})\Z")


def held(
    items: ItemQuerySet,
    *,
    as_of: datetime | None,
    known_at: datetime | None,
    statuses: Sequence[str] | None,
    now: datetime,
) -> ItemQuerySet:
    """The items that held in the world ``as_of`` (default ``known_at``) as memory knew
    them ``known_at`` (default ``now``), of ``statuses`` (default active and superseded).
    An item let go or made stale after ``known_at`` counts as it stood then."""
    known = known_at or now
    moment = as_of or known
    wanted = list(statuses) if statuses is not None else list(DEFAULT_HELD_STATUSES)
    status_q = Q(status__in=wanted)
    if known_at is not None and (ItemStatus.ACTIVE in wanted or ItemStatus.SUPERSEDED in wanted):
        # What was active then and has left memory since.
        status_q |= Q(
            status__in=[ItemStatus.STALE, ItemStatus.LET_GO],
            activated_at__lte=known,
            expired_at__gt=known,
        )
    if known_at is None:
        # What memory holds now, including states recorded a moment ahead of the clock
        # (new states of one agent are spaced a millisecond apart).
        items = items.filter(status_q, expired_at__isnull=True).filter(valid_from__lte=moment)
        return items.filter(Q(valid_to__isnull=True) | Q(valid_to__gt=moment))
    return items.filter(status_q).known_at(known).filter(valid_as_known_q(moment, known))


@dataclass
class ItemPage:
    """One page of items; pass ``next_cursor`` back for the next page."""

    items: list[MemoryItem] = field(default_factory=list)
    next_cursor: str | None = None


def page_items(items: ItemQuerySet, *, limit: int | None, cursor: str | None) -> ItemPage:
    """One page of ``items``, the most recently recorded first, after ``cursor``. Raises
    ``InvalidInput`` for a bad limit or cursor."""
    size = page_limit(limit)
    items = items.order_by("-recorded_at", "-id")
    if cursor:
        last_recorded_at, last_id = decode_keyset(
            cursor, pattern=ITEM_CURSOR_PATTERN, made_by="the item list"
        )
        items = items.filter(
            Q(recorded_at__lt=last_recorded_at) | Q(recorded_at=last_recorded_at, id__lt=last_id)
        )
    rows = list(items.select_related("subject")[: size + 1])
    if len(rows) > size:
        last = rows[size - 1]
        return ItemPage(items=rows[:size], next_cursor=encode_keyset(last.recorded_at, last.pk))
    return ItemPage(items=rows)


class ItemReads(ItemRules):
    """The reads of memory items a run makes: what holds, what recall searches, a
    slot's history."""

    # --- reading ---------------------------------------------------------------------

    def query(
        self,
        scope: MemoryScope,
        *,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        statuses: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        slot: Slot | None = None,
        grants: Grants | None = None,
    ) -> list[MemoryItem]:
        """The items a run of ``scope`` sees that held in the world ``as_of`` (default
        ``known_at``) as memory knew them ``known_at`` (default now), newest first. By
        default active and superseded items, the state that holds read from the times;
        an item let go or made stale after ``known_at`` counts as it stood then."""
        items: ItemQuerySet = MemoryItem.objects.seen_from(scope)
        if grants is not None:
            items = items.visible_to(grants)
        items = held(items, as_of=as_of, known_at=known_at, statuses=statuses, now=self.clock())
        if kinds is not None:
            items = items.filter(kind__in=list(kinds))
        if slot is not None:
            items = items.of_slot(slot.subject_id, slot.attribute)
        return _newest_first(items, scope)

    def recallable(
        self, scope: MemoryScope, *, as_of: datetime, grants: Grants | None = None
    ) -> list[MemoryItem]:
        """The items recall searches: those a run of ``scope`` sees that memory holds
        (active or superseded, not let go, stale or rejected) and that began by ``as_of``,
        whether they still hold or held before, newest first. Those of them that hold at
        ``as_of`` are what ``query(scope, as_of=as_of)`` returns."""
        items: ItemQuerySet = MemoryItem.objects.seen_from(scope)
        if grants is not None:
            items = items.visible_to(grants)
        items = items.filter(
            status__in=list(DEFAULT_HELD_STATUSES), expired_at__isnull=True, valid_from__lte=as_of
        )
        return _newest_first(items, scope)

    def history(
        self, scope: MemoryScope, slot: Slot, *, grants: Grants | None = None
    ) -> list[MemoryItem]:
        """Every state of a slot the scope sees, closed, let go and stale ones included,
        in the order of their validity."""
        items: ItemQuerySet = MemoryItem.objects.seen_from(scope).of_slot(
            slot.subject_id, slot.attribute
        )
        if grants is not None:
            items = items.visible_to(grants)
        return list(items.select_related("subject").in_timeline_order())


def _newest_first(items: ItemQuerySet, scope: MemoryScope) -> list[MemoryItem]:
    """``items`` with their subjects, the newest first (by start, then record, then id).

    The subjects are read apart, once each: a user's items are mostly about a few
    subjects (the user first), so a join would build the same entity once per item."""
    items = items.order_by("-valid_from", "-recorded_at", "-id")
    if scope.user_id is not None and connections[items.db].vendor == "sqlite":
        # SQLite serves "the user's or no user's" with no plan but reading every item of
        # the agent; the user's and the shared ones, asked apart, are each one range of
        # the (agent, user, status) index. Its BINARY collation orders ids as Python
        # does, so the merged list is in the order one query would give.
        found = [*items.filter(user_id=scope.user_id), *items.filter(user_id__isnull=True)]
        found.sort(key=lambda item: (item.valid_from, item.recorded_at, item.pk), reverse=True)
    else:
        found = list(items)
    prefetch_related_objects(found, "subject")
    return found
