"""``MemoryItems.purge``: items of a scope that is forgotten, deleted with their evidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, Evidence, ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def write(value: str, subject: str = "Ana", when: datetime = T0) -> MemoryItem:
    return (
        MemoryItems(clock=lambda: when)
        .write(
            ANA,
            NewItem(
                kind="fact",
                subject=subject,
                attribute="home city",
                value=value,
                trust="user",
                confidence=0.9,
                evidence=[NewEvidence(quote=value)],
            ),
        )
        .item
    )


def test_purged_items_go_with_their_evidence_and_unused_entities() -> None:
    porto = write("Porto")
    lisbon = write("Lisbon", when=T0 + timedelta(days=1))
    other = write("Oslo", subject="Bo")
    MemoryItems().activate([porto.pk, lisbon.pk])
    assert MemoryItem.objects.get(pk=porto.pk).status == ItemStatus.SUPERSEDED

    purged, entities = MemoryItems().purge([lisbon.pk, other.pk, "item_missing"])

    assert sorted(purged) == sorted([lisbon.pk, other.pk])
    assert entities == 1
    assert list(MemoryItem.objects.values_list("pk", flat=True)) == [porto.pk]
    assert Evidence.objects.filter(item_id__in=purged).count() == 0
    assert list(Entity.objects.values_list("name", flat=True)) == ["Ana"]
    # The state before the purged one holds again.
    assert MemoryItem.objects.get(pk=porto.pk).status == ItemStatus.ACTIVE
    assert MemoryItems().purge([]) == ([], 0)
