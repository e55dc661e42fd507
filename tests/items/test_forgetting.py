"""Items that stand on entries which go: purged, or revised, in the same transaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, Evidence, ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services as threads

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def conversation():
    thread = threads.create_thread("concierge", {"userId": "ana"})
    first = threads.add_entry(thread.pk, role="user", content="I live in Lisbon.")
    second = threads.add_entry(thread.pk, role="user", content="Yes, Lisbon is home.")
    return thread, first, second


def write(value: str, *entries, attribute: str = "home city", when: datetime = T0) -> MemoryItem:
    evidence = [NewEvidence(quote=e.content.rstrip("."), entry_id=e.pk) for e in entries]
    clock_items = MemoryItems(clock=lambda: when)
    return clock_items.write(
        ANA,
        NewItem(
            kind="fact",
            subject="Ana",
            attribute=attribute,
            value=value,
            trust="user",
            confidence=0.9,
            evidence=evidence,
        ),
    ).item


@pytest.mark.parametrize("how", ["delete", "redact"])
def test_an_item_standing_only_on_an_entry_that_goes_is_purged(conversation, how: str) -> None:
    _thread, first, _second = conversation
    item = write("Lisbon", first)
    assert item.status == ItemStatus.ACTIVE
    if how == "delete":
        threads.delete_entry(first.pk)
    else:
        threads.redact_entry(first.pk)
    assert not MemoryItem.objects.filter(pk=item.pk).exists()
    assert not Evidence.objects.exists()
    assert not Entity.objects.exists()


def test_an_item_standing_on_more_loses_only_the_quotes_of_what_went(conversation) -> None:
    _thread, first, second = conversation
    item = write("Lisbon", first, second)
    threads.delete_entry(first.pk)
    item.refresh_from_db()
    assert list(Evidence.objects.filter(item=item).values_list("entry_id", flat=True)) == [
        second.pk
    ]
    assert item.verified is True


def test_the_state_before_a_purged_one_holds_again(conversation) -> None:
    thread, first, _second = conversation
    porto = threads.add_entry(thread.pk, role="user", content="I lived in Porto.")
    older = write("Porto", porto, when=T0)
    write("Lisbon", first, when=T0 + timedelta(days=1))
    older.refresh_from_db()
    assert older.status == ItemStatus.SUPERSEDED
    threads.delete_entry(first.pk)
    older.refresh_from_db()
    assert (older.status, older.valid_to) == (ItemStatus.ACTIVE, None)


def test_clearing_or_deleting_the_thread_purges_its_items(conversation) -> None:
    thread, first, second = conversation
    write("Lisbon", first, second)
    write("aisle", second, attribute="seat")
    threads.clear_thread(thread.pk)
    assert not MemoryItem.objects.exists()
    write_again_thread = threads.create_thread("concierge", {"userId": "ana"})
    entry = threads.add_entry(write_again_thread.pk, role="user", content="I live in Lisbon.")
    write("Lisbon", entry)
    threads.delete_thread(write_again_thread.pk)
    assert not MemoryItem.objects.exists()


def test_a_failed_change_keeps_the_items(conversation) -> None:
    _thread, first, _second = conversation
    item = write("Lisbon", first)
    with pytest.raises(RuntimeError), transaction.atomic():
        threads.delete_entry(first.pk)
        raise RuntimeError("rolled back")
    assert MemoryItem.objects.filter(pk=item.pk).exists()


def test_an_item_left_with_a_quote_that_does_not_hold_is_not_verified(conversation) -> None:
    # given an item on a holding quote, another holding quote, and one that does not hold
    thread, first, second = conversation
    made_up = threads.add_entry(thread.pk, role="user", content="Lisbon, I said.")
    item = (
        MemoryItems(clock=lambda: T0)
        .write(
            ANA,
            NewItem(
                kind="fact",
                subject="Ana",
                attribute="home city",
                value="Lisbon",
                trust="user",
                confidence=0.9,
                evidence=[
                    NewEvidence(quote="I live in Lisbon", entry_id=first.pk),
                    NewEvidence(quote="Yes, Lisbon is home", entry_id=second.pk),
                    NewEvidence(quote="I moved to Lisbon", entry_id=made_up.pk),
                ],
            ),
        )
        .item
    )
    assert item.verified is False
    # when an entry of a holding quote goes
    threads.delete_entry(second.pk)
    # then what is left still has a quote that does not hold: not verified
    item.refresh_from_db()
    assert item.evidence.count() == 2
    assert item.verified is False
    # and once only holding quotes are left, it is verified again
    threads.delete_entry(made_up.pk)
    item.refresh_from_db()
    assert item.verified is True
