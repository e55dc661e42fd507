"""Items that stand on entries which go: purged, or revised, in the same transaction."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings

from cogitator_memory import dependents
from cogitator_memory.embeddings.entry_vectors import DELETE_SOURCES
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import (
    Entity,
    Evidence,
    ExtractionWindow,
    ItemStatus,
    MemoryItem,
)
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.items.vectors import ITEMS_FILTER, embed_items
from cogitator_memory.keywords.models import KeywordPosting
from cogitator_memory.outbox import services as outbox
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.threads import services as threads
from tests.lineage_support import SECRET_WORD, U1, tell_a_secret
from tests.search.support import CONCEPT_PROVIDER

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


# --- what else goes with the items and entries ---------------------------------------------


@pytest.fixture
def exact_store() -> Iterator[None]:
    settings = {"EMBEDDINGS": {"PROVIDER": CONCEPT_PROVIDER, "STORE": "exact"}}
    with override_settings(COGITATOR_MEMORY=settings):
        yield


@pytest.fixture
def qdrant_store() -> Iterator[None]:
    settings = {
        "EMBEDDINGS": {"PROVIDER": CONCEPT_PROVIDER, "STORE": "qdrant", "QDRANT_PATH": ":memory:"}
    }
    with override_settings(COGITATOR_MEMORY=settings):
        yield
        get_embedding_store().close()  # type: ignore[attr-defined]


def item_vector_sources() -> set[str]:
    store = get_embedding_store()
    return {source for batch in store.iter_source_ids(ITEMS_FILTER) for source in batch}


def test_a_purged_items_vectors_go_in_the_same_transaction(exact_store: None) -> None:
    # given two items embedded, one standing on the entry that goes
    told = tell_a_secret()
    kept = (
        MemoryItems()
        .write(
            U1,
            NewItem(
                kind="fact",
                subject="u1",
                attribute="plans",
                value="a table for two",
                trust="user",
                confidence=0.9,
                evidence=[NewEvidence(quote="a table for two", entry_id=told.other.pk)],
            ),
        )
        .item
    )
    embed_items([kept.pk])
    assert item_vector_sources() == {told.item.pk, kept.pk}
    assert KeywordPosting.objects.filter(term=SECRET_WORD).exists()
    # when the change rolls back, then the vector stays
    with pytest.raises(RuntimeError), transaction.atomic():
        threads.delete_entry(told.entry.pk)
        assert item_vector_sources() == {kept.pk}
        raise RuntimeError("rolled back")
    assert item_vector_sources() == {told.item.pk, kept.pk}
    # when it commits, then it and its keyword postings are gone, counted
    with transaction.atomic():
        forgotten = dependents.forget_entries([told.entry.pk])
    assert (forgotten["items.purged"], forgotten["vectors"]) == (1, 1)
    assert item_vector_sources() == {kept.pk}
    assert not KeywordPosting.objects.filter(term=SECRET_WORD).exists()
    assert not Embedding.objects.filter(content__icontains=SECRET_WORD).exists()


def test_with_qdrant_a_purged_items_vectors_go_through_the_outbox(
    qdrant_store: None, django_capture_on_commit_callbacks: Any
) -> None:
    # given an item embedded into Qdrant
    told = tell_a_secret()
    assert item_vector_sources() == {told.item.pk}
    # when its entry goes, the delete waits in the outbox until the change commits
    with django_capture_on_commit_callbacks(execute=True):
        threads.delete_entry(told.entry.pk)
        assert OutboxMessage.objects.filter(topic=DELETE_SOURCES).count() == 2
        assert item_vector_sources() == {told.item.pk}
    # then it is carried out after commit
    assert item_vector_sources() == set()
    assert outbox.pending() == 0


def test_extraction_windows_naming_an_entry_that_goes_go_with_it(conversation) -> None:
    # given windows ending at, beginning at, and around the entry that goes
    thread, first, second = conversation
    third = threads.add_entry(thread.pk, role="user", content="And I cycle.")

    def window(start, end) -> ExtractionWindow:
        return ExtractionWindow.objects.create(
            thread=thread, first_entry_id=start.pk, last_entry_id=end.pk, version="v1"
        )

    ends_there, starts_there = window(first, second), window(second, third)
    around = window(first, third)
    other_thread = threads.create_thread("concierge")
    elsewhere = threads.add_entry(other_thread.pk, role="user", content="Hi.")
    unrelated = window(elsewhere, elsewhere)
    # when
    with transaction.atomic():
        forgotten = dependents.forget_entries([second.pk])
    # then the windows that name it are gone, and the others stay
    assert forgotten["extraction_windows"] == 2
    left = set(ExtractionWindow.objects.values_list("pk", flat=True))
    assert left == {around.pk, unrelated.pk}
    assert not {ends_there.pk, starts_there.pk} & left
