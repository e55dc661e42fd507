"""Named filters of memory items, entities and evidence."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models

from cogitator_memory.grants import ScopedQuerySet

if TYPE_CHECKING:
    from cogitator_memory.items.models import Entity, Evidence, MemoryItem  # noqa: F401

# The ``stale_because.reason`` of an item a reviewer rejected (its ``note`` says why).
REJECTED = "rejected"


class ItemQuerySet(ScopedQuerySet["MemoryItem"]):
    def of_slot(self, subject_id: str, attribute: str) -> ItemQuerySet:
        """The states of one slot: a subject's attribute."""
        return self.filter(subject_id=subject_id, attribute=attribute)

    def with_statuses(self, statuses: Iterable[str]) -> ItemQuerySet:
        """Items of any of these statuses."""
        return self.filter(status__in=list(statuses))

    def known_at(self, moment: datetime) -> ItemQuerySet:
        """Items memory held at ``moment``: recorded by then, not expired by then."""
        return self.filter(known_at_q(moment))

    def rejected(self) -> ItemQuerySet:
        """Items a reviewer rejected: stale, because ``rejected``."""
        return self.filter(status="stale", stale_because__reason=REJECTED)

    def in_timeline_order(self) -> ItemQuerySet:
        """By the start of their validity; states told at one instant by when memory learned
        them, then by id, so every reader lays a slot out the same way."""
        return self.order_by("valid_from", "recorded_at", "id")


def valid_as_known_q(moment: datetime, known: datetime) -> models.Q:
    """Items that held at ``moment`` as memory knew them at ``known``: an end memory
    learned after ``known`` is read as the end the item had then (the one it was given,
    or none)."""
    ended_since = models.Q(valid_to_known_at__gt=known) & (
        models.Q(ends_at__isnull=True) | models.Q(ends_at__gt=moment)
    )
    return models.Q(valid_from__lte=moment) & (
        models.Q(valid_to__isnull=True) | models.Q(valid_to__gt=moment) | ended_since
    )


def known_at_q(moment: datetime) -> models.Q:
    return models.Q(recorded_at__lte=moment) & (
        models.Q(expired_at__isnull=True) | models.Q(expired_at__gt=moment)
    )


class EntityQuerySet(ScopedQuerySet["Entity"]):
    pass


class EvidenceQuerySet(models.QuerySet["Evidence"]):
    def of_entries(self, entry_ids: list[str]) -> EvidenceQuerySet:
        """Evidence quoting any of these entries (what stands on them)."""
        return self.filter(entry_id__in=entry_ids)

    def holding(self) -> EvidenceQuerySet:
        """Quotes found word for word in their entries."""
        return self.filter(verified=True)
