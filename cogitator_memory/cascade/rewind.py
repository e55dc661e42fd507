"""Rewinding a thread (``RewindCascade``): nothing is deleted; the items that stood only on
the entries left behind become stale, before the thread moves."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from cogitator_memory.cascade.entries import EntryCascade
from cogitator_memory.cascade.plans import chunks
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.items.models import (
    Evidence,
    ItemStatus,
)
from cogitator_memory.threads import services as thread_services
from cogitator_memory.threads.locking import lock_thread
from cogitator_memory.threads.paths import walk_ids_until
from cogitator_memory.threads.selectors import entry_in_thread

REWOUND = "rewound"
# Statuses a rewind marks stale; stale and let-go items stay as they are.
STANDING_STATUSES = (ItemStatus.SUGGESTED, ItemStatus.ACTIVE, ItemStatus.SUPERSEDED)


class RewindCascade(EntryCascade):
    """``rewind``."""

    def rewind(self, thread_id: str, to_entry_id: str) -> CascadeReport:
        """Move the thread's active leaf back to ``to_entry_id`` and mark stale the items
        that stood only on the entries left behind (``stale_because``: ``{"reason":
        "rewound", "threadId", "toEntryId", "at"}``), before the thread moves, in one
        transaction: a rewind refused leaves them as they were. Nothing is deleted; a
        thread at ``to_entry_id`` already is left as it is. Checking the left branch out
        again restores nothing: the items stay stale until a reviewer activates them.

        Raises ``ThreadNotFound``, ``EntryNotInThread`` and ``NotOnActiveBranch``."""
        report = CascadeReport()
        with transaction.atomic():
            thread = lock_thread(thread_id, grants=self.grants)
            target = entry_in_thread(to_entry_id, thread.pk, field="to_entry_id")
            if thread.active_leaf_id == target.pk:
                return report
            walked = (
                walk_ids_until(thread.active_leaf_id, target.pk)
                if thread.active_leaf_id is not None
                else []
            )
            if walked and walked[-1] == target.pk:
                left = walked[:-1]
                stale = self.items.mark_stale(
                    self._items_only_on(left),
                    {"reason": REWOUND, "threadId": thread.pk, "toEntryId": target.pk},
                    only_from=STANDING_STATUSES,
                    grants=self.grants,
                )
                report.items.stale += len(stale)
            # Refuses (NotOnActiveBranch) a target off the active branch: nothing changed.
            thread_services.rewind(thread.pk, target.pk, grants=self.grants)
            report.note_thread_changed(thread.pk)
        return report

    @staticmethod
    def _items_only_on(entry_ids: Sequence[str]) -> list[str]:
        """The items every quote of which is in these entries."""
        left = set(entry_ids)
        candidates: set[str] = set()
        for chunk in chunks(list(entry_ids)):
            candidates.update(Evidence.objects.of_entries(chunk).values_list("item_id", flat=True))
        quotes: dict[str, set[str | None]] = {}
        for chunk in chunks(sorted(candidates)):
            for item_id, entry_id in Evidence.objects.filter(item_id__in=chunk).values_list(
                "item_id", "entry_id"
            ):
                quotes.setdefault(item_id, set()).add(entry_id)
        return sorted(item for item, entries in quotes.items() if entries <= left)
