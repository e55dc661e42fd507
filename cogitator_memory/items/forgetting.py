"""Memory items that stand on entries which go (a ``dependents.Dependent``).

When entries are deleted or redacted (or their thread cleared or deleted), in the same
transaction: an item whose every quote is in those entries is purged, an item that stands
on more loses the quotes of them (``MemoryItems.revise_evidence``), and an entity that no
item is about any more is deleted. The slots that lost a state are laid out again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db.models import Count, Q

from cogitator_memory.dependents import Forgotten
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, Evidence, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import Slot
from cogitator_memory.items.write_sql import layout_slot

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

__all__ = ["ItemsOnEntries"]


class ItemsOnEntries:
    """Purges or revises the items that quote entries that go."""

    name = "items"
    models = (MemoryItem, Evidence, Entity)

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """Items are extracted from entries later, by a run: nothing to derive yet."""

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        ids = list(entry_ids)
        standing = Evidence.objects.of_entries(ids).values("item_id").distinct()
        touched = list(
            Evidence.objects.filter(item_id__in=standing)
            .values("item_id")
            .annotate(quotes=Count("id"), of_these=Count("id", filter=Q(entry_id__in=ids)))
            .values_list("item_id", "quotes", "of_these")
        )
        if not touched:
            return
        purged = [pk for pk, quotes, of_these in touched if quotes == of_these]
        revised = [pk for pk, quotes, of_these in touched if quotes != of_these]
        gone = set(ids)
        items = MemoryItems()
        # The slots are laid out again below: under the lock a write of their agent takes,
        # so a write racing the deletion cannot leave a slot with two open states.
        items.lock_agents(
            MemoryItem.objects.filter(pk__in=[pk for pk, _q, _o in touched]).values_list(
                "agent_id", flat=True
            )
        )
        trimmed = items.revise_evidence(
            revised, keep=lambda evidence: evidence.entry_id not in gone
        )
        forgotten["items.trimmed"] += len(trimmed)
        if purged:
            slots = {
                (Slot(item.subject_id, item.attribute), MemoryScope.of(item))
                for item in MemoryItem.objects.filter(pk__in=purged)
            }
            subjects = {slot.subject_id for slot, _scope in slots}
            Evidence.objects.filter(item_id__in=purged).delete()
            MemoryItem.objects.filter(pk__in=purged).delete()
            now = items.clock()
            for slot, scope in slots:
                layout_slot(slot, scope, known_at=now)
            entities, _ = Entity.objects.filter(pk__in=subjects, items__isnull=True).delete()
            forgotten["items.purged"] += len(purged)
            forgotten["entities"] += entities

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        # Items keep the scope they were written in; a thread moving to another user does
        # not move what its user established before.
        return None
