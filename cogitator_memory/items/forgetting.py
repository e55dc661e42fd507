"""What memory items keep of entries which go (``dependents.Dependent``\\ s).

``ItemsOnEntries``: when entries are deleted or redacted (or their thread cleared or
deleted), in the same transaction, an item whose every quote is in those entries is
purged (``purge_items``: its evidence, the item, its vectors, and the entity no item is
about any more), an item that stands on more loses the quotes of them
(``MemoryItems.revise_evidence``). The slots that lost a state are laid out again.

``ExtractionWindows``: a window extraction read (``ExtractionWindow``) names its first
and last entries; a window naming an entry that goes is deleted with it. Its items'
lineage is their evidence, above; what the window did is only that the stretch was
read, and where it was the newest window of its branch the next run reads that stretch
again, without what went.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Count, Q

from cogitator_memory.dependents import Forgotten, items_purged
from cogitator_memory.embeddings.entry_vectors import forget_vectors
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, Evidence, ExtractionWindow, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import Slot
from cogitator_memory.items.write_sql import layout_slot
from cogitator_memory.threads.models import Entry

__all__ = ["ExtractionWindows", "ItemsOnEntries", "purge_items"]

# Entry ids per query: well under SQLite's parameter limit.
IDS_PER_QUERY = 500


def purge_items(
    item_ids: Sequence[str], forgotten: Forgotten, *, items: MemoryItems | None = None
) -> None:
    """Delete these items whole, in the open transaction: their evidence, the items, their
    vectors (``forget_vectors``: in the transaction, or through the outbox for a store
    outside the database), and the entities no item is about any more; the slots that
    lost a state are laid out again. Counts ``items.purged``, ``entities`` and
    ``vectors``. Takes the write lock of the items' agents (a vector being stored for one
    of them waits, then finds it gone: ``items/vectors.py``)."""
    ids = list(dict.fromkeys(item_ids))
    if not ids:
        return
    items = items if items is not None else MemoryItems()
    chosen = MemoryItem.objects.filter(pk__in=ids)
    items.lock_agents(chosen.values_list("agent_id", flat=True))
    slots = {(Slot(item.subject_id, item.attribute), MemoryScope.of(item)) for item in chosen}
    if not slots:
        return
    subjects = {slot.subject_id for slot, _scope in slots}
    # Before the rows go: what names them (observations, playbook rules) may read them.
    items_purged(ids, forgotten)
    Evidence.objects.filter(item_id__in=ids).delete()
    _, deleted = MemoryItem.objects.filter(pk__in=ids).delete()
    # After the items: a vector stored meanwhile was stored under the lock taken above.
    forget_vectors(ids, forgotten)
    now = items.clock()
    for slot, scope in slots:
        layout_slot(slot, scope, known_at=now)
    entities, _ = Entity.objects.filter(pk__in=subjects, items__isnull=True).delete()
    forgotten["items.purged"] += deleted.get(MemoryItem._meta.label, 0)
    forgotten["entities"] += entities


class ItemsOnEntries:
    """Purges or revises the items that quote entries that go; their vectors go with
    the items purged."""

    name = "items"
    models = (MemoryItem, Evidence, Entity, Embedding)

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
        purge_items(purged, forgotten, items=items)

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        # Items keep the scope they were written in; a thread moving to another user does
        # not move what its user established before.
        return None


class ExtractionWindows:
    """Deletes the extraction windows that begin or end at an entry that goes."""

    name = "extraction_windows"
    models = (ExtractionWindow,)

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """A window is written by the run that reads it."""

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        ids = list(entry_ids)
        for start in range(0, len(ids), IDS_PER_QUERY):
            chunk = ids[start : start + IDS_PER_QUERY]
            # By thread first: the windows' key (thread, first, last, version) is the index.
            # Called before the entries go, so they still name their threads.
            threads = Entry.objects.filter(pk__in=chunk).values("thread_id")
            deleted, _ = (
                ExtractionWindow.objects.filter(thread_id__in=threads)
                .filter(Q(first_entry_id__in=chunk) | Q(last_entry_id__in=chunk))
                .delete()
            )
            forgotten["extraction_windows"] += deleted

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        """A window names its thread and entries, no owner."""
