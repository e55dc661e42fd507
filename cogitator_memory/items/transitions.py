"""The transitions of memory items' statuses (``ItemTransitions``): activate, reject, let go,
mark stale, and the revision of evidence. Each locks the agents it changes, changes the
items the caller may see, and lays their slots out again."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F

from cogitator_memory.dependents import Forgotten, items_purged
from cogitator_memory.exceptions import InvalidItem
from cogitator_memory.grants import SCOPE_FIELDS, Grants, MemoryScope
from cogitator_memory.items.activation import items_activated
from cogitator_memory.items.models import (
    Entity,
    Evidence,
    ItemStatus,
    MemoryItem,
)
from cogitator_memory.items.querysets import REJECTED
from cogitator_memory.items.rules import ItemRules
from cogitator_memory.items.statements import Slot
from cogitator_memory.items.write_sql import layout_slot
from cogitator_memory.jsondata import json_problem

# What activating, rejecting, letting go and marking stale change in a state.
REVIEWED_FIELDS = ("status", "activated_at", "expired_at", "stale_because")


class ItemTransitions(ItemRules):
    """The changes of status after a write: a reviewer's decisions, marking stale,
    dropping evidence of entries that went, and counting retrievals."""

    # --- reviewing and forgetting ----------------------------------------------------

    def _change(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None,
        from_statuses: Sequence[str] | None,
        apply: Callable[[MemoryItem, datetime], None],
    ) -> list[str]:
        """Change the items of ``ids`` the caller may see (of ``from_statuses``), lay
        their slots out again, and return the ids changed."""
        items = MemoryItem.objects.filter(pk__in=list(dict.fromkeys(ids)))
        if grants is not None:
            items = items.visible_to(grants)
        if from_statuses is not None:
            items = items.with_statuses(from_statuses)
        changed: list[str] = []
        slots: set[tuple[Slot, MemoryScope]] = set()
        for agent_id in sorted(set(items.values_list("agent_id", flat=True))):
            self._lock_agent(agent_id)
        now = self.clock()
        for item in items.select_for_update().order_by("id"):
            apply(item, now)
            item.save(update_fields=REVIEWED_FIELDS)
            changed.append(item.pk)
            slots.add((Slot(item.subject_id, item.attribute), MemoryScope.of(item)))
        for slot, scope in sorted(slots, key=lambda pair: (pair[0].subject_id, pair[0].attribute)):
            layout_slot(slot, scope, known_at=now)
        return changed

    # The review decisions (``items.review``: ActivateItems, RejectItems, LetGoItems) pass
    # the statuses each applies to as ``from_statuses``; items in another status are left
    # as they are. Without it (trusted code that knows what it changes) any status goes.

    @transaction.atomic
    def activate(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None = None,
        from_statuses: Sequence[str] | None = None,
    ) -> list[str]:
        """Items become active (a reviewer's approval), and the registered activation
        steps follow in the same transaction (``items.activation``). Returns the ids
        activated."""

        def apply(item: MemoryItem, now: datetime) -> None:
            item.status = ItemStatus.ACTIVE
            item.activated_at = now
            item.expired_at = None
            item.stale_because = None

        changed = self._change(ids, grants=grants, from_statuses=from_statuses, apply=apply)
        items_activated(changed)
        return changed

    @transaction.atomic
    def reject(
        self,
        ids: Iterable[str],
        reason: str,
        *,
        grants: Grants | None = None,
        from_statuses: Sequence[str] | None = None,
    ) -> list[str]:
        """A reviewer's refusal: the items become stale with the reason (its rule is
        ``RejectItems``'), out of every context, kept for the record. Returns the ids
        rejected."""
        return self.mark_stale(
            ids,
            {"reason": REJECTED, "note": reason},
            only_from=from_statuses,
            grants=grants,
        )

    @transaction.atomic
    def let_go(
        self,
        ids: Iterable[str],
        *,
        grants: Grants | None = None,
        from_statuses: Sequence[str] | None = None,
    ) -> list[str]:
        """Memory lets the items go: they keep their place in their slot's timeline, so
        the state before does not come back, and leave every context. Returns the ids
        let go."""

        def apply(item: MemoryItem, now: datetime) -> None:
            item.status = ItemStatus.LET_GO
            item.expired_at = now

        return self._change(ids, grants=grants, from_statuses=from_statuses, apply=apply)

    @transaction.atomic
    def mark_stale(
        self,
        ids: Iterable[str],
        because: Mapping[str, Any] | None = None,
        only_from: Sequence[str] | None = None,
        *,
        grants: Grants | None = None,
    ) -> list[str]:
        """Mark items stale with ``because`` (kept in ``stale_because``); with
        ``only_from``, items whose status is no longer one of those are left as they are.
        Returns the ids it marked."""
        reason = dict(because or {})
        if problem := json_problem(reason):
            raise InvalidItem({"because": f"Must be JSON data: {problem}"})

        def apply(item: MemoryItem, now: datetime) -> None:
            item.status = ItemStatus.STALE
            item.expired_at = now
            item.stale_because = {**reason, "at": now.isoformat()}

        statuses = list(only_from) if only_from is not None else None
        return self._change(ids, grants=grants, from_statuses=statuses, apply=apply)

    @transaction.atomic
    def purge(
        self, ids: Iterable[str], forgotten: Forgotten | None = None
    ) -> tuple[list[str], int]:
        """Delete these items and their evidence (a scope that is forgotten), lay out
        again the slots that lost a state, and delete the entities no item is about any
        more; what names the items (``dependents.items_purged``) is forgotten first and
        counted in ``forgotten``. Returns the ids deleted and how many entities went.
        Trusted code only: the cascades check the caller's grants on what they forget."""
        wanted = list(dict.fromkeys(ids))
        chosen = MemoryItem.objects.filter(pk__in=wanted)
        self.lock_agents(chosen.values_list("agent_id", flat=True))
        rows = list(chosen.only(*SCOPE_FIELDS, "id", "subject_id", "attribute"))
        if not rows:
            return [], 0
        purged = [item.pk for item in rows]
        items_purged(purged, forgotten)
        slots = {(Slot(item.subject_id, item.attribute), MemoryScope.of(item)) for item in rows}
        subjects = sorted({item.subject_id for item in rows})
        Evidence.objects.filter(item_id__in=purged).delete()
        MemoryItem.objects.filter(pk__in=purged).delete()
        now = self.clock()
        for slot, scope in sorted(slots, key=lambda pair: (pair[0].subject_id, pair[0].attribute)):
            layout_slot(slot, scope, known_at=now)
        entities, _ = Entity.objects.filter(pk__in=subjects, items__isnull=True).delete()
        return purged, entities

    @transaction.atomic
    def revise_evidence(self, ids: Iterable[str], keep: Callable[[Evidence], bool]) -> list[str]:
        """Drop the evidence ``keep`` refuses from these items (the quotes of entries that
        went); an item stays verified only while it has quotes and every one of them holds
        (the rule of a write). Returns the ids of the items changed."""
        changed: list[str] = []
        chosen = MemoryItem.objects.filter(pk__in=list(ids))
        self.lock_agents(chosen.values_list("agent_id", flat=True))
        for item in chosen.order_by("id"):
            dropped = [row.pk for row in item.evidence.all() if not keep(row)]
            if not dropped:
                continue
            Evidence.objects.filter(pk__in=dropped).delete()
            left = item.evidence.all()
            item.verified = left.exists() and not left.exclude(verified=True).exists()
            item.save(update_fields=["verified"])
            changed.append(item.pk)
        return changed

    def note_retrieved(self, ids: Iterable[str], at: datetime | None = None) -> int:
        """Count that these items went to a model (one UPDATE). Returns how many rows."""
        moment = at or self.clock()
        return MemoryItem.objects.filter(pk__in=list(dict.fromkeys(ids))).update(
            times_retrieved=F("times_retrieved") + 1, last_retrieved_at=moment
        )
