"""``rewind``: the items that stood only on the entries left behind become stale, before
the thread moves; nothing is deleted."""

from __future__ import annotations

from datetime import datetime

import pytest

from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.exceptions import NotOnActiveBranch
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry, Thread

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")


def item(attribute: str, value: str, *entries: Entry) -> MemoryItem:
    return (
        MemoryItems()
        .write(
            ANA,
            NewItem(
                kind="fact",
                subject="Ana",
                attribute=attribute,
                value=value,
                trust="user",
                confidence=0.9,
                evidence=[NewEvidence(quote=str(e.content), entry_id=e.pk) for e in entries],
            ),
        )
        .item
    )


@pytest.fixture
def chat() -> dict[str, Entry]:
    threads.create_thread("concierge", {"userId": "ana"}, thread_id="chat")
    names = ["home", "ok", "pet", "noted"]
    roles = ["user", "assistant", "user", "assistant"]
    texts = ["I live in Lisbon", "Lisbon, noted", "I have a cat", "A cat, noted"]
    return {
        name: threads.add_entry("chat", role=role, content=text)
        for name, role, text in zip(names, roles, texts, strict=True)
    }


def status(item: MemoryItem) -> str:
    return MemoryItem.objects.get(pk=item.pk).status


def test_items_standing_only_on_the_entries_left_behind_become_stale(
    chat: dict[str, Entry],
) -> None:
    home = item("home", "Lisbon", chat["home"])
    pet = item("pet", "cat", chat["pet"], chat["noted"])
    both = item("likes", "Lisbon cats", chat["home"], chat["pet"])

    report = MemoryCascade().rewind("chat", chat["ok"].pk)

    assert Thread.objects.get(pk="chat").active_leaf_id == chat["ok"].pk
    assert (status(home), status(pet)) == ("active", "stale")
    assert status(both) != "stale"
    because = MemoryItem.objects.get(pk=pet.pk).stale_because
    assert {key: because[key] for key in ("reason", "threadId", "toEntryId")} == {
        "reason": "rewound",
        "threadId": "chat",
        "toEntryId": chat["ok"].pk,
    }
    assert datetime.fromisoformat(because["at"])
    assert report.items.stale == 1
    assert report.threads_changed == ["chat"]
    assert Entry.objects.filter(thread_id="chat").count() == 4  # nothing deleted


def test_checking_the_left_branch_out_again_restores_nothing(chat: dict[str, Entry]) -> None:
    pet = item("pet", "cat", chat["pet"])
    MemoryCascade().rewind("chat", chat["ok"].pk)

    threads.checkout("chat", chat["noted"].pk)

    assert status(pet) == ItemStatus.STALE
    MemoryItems().activate([pet.pk])
    assert status(pet) == ItemStatus.ACTIVE


def test_a_thread_at_the_entry_already_is_left_as_it_is(chat: dict[str, Entry]) -> None:
    pet = item("pet", "cat", chat["pet"])

    report = MemoryCascade().rewind("chat", chat["noted"].pk)

    assert report.is_empty()
    assert status(pet) == ItemStatus.ACTIVE


def test_a_refused_rewind_leaves_the_items_as_they_were(chat: dict[str, Entry]) -> None:
    pet = item("pet", "cat", chat["pet"])
    side = threads.add_entry("chat", role="user", content="elsewhere", parent_id=chat["ok"].pk)
    threads.checkout("chat", chat["noted"].pk)

    with pytest.raises(NotOnActiveBranch):
        MemoryCascade().rewind("chat", side.pk)

    assert status(pet) == ItemStatus.ACTIVE
    assert Thread.objects.get(pk="chat").active_leaf_id == chat["noted"].pk


def test_an_item_stale_or_let_go_already_is_left_as_it_is(chat: dict[str, Entry]) -> None:
    pet = item("pet", "cat", chat["pet"])
    MemoryItems().let_go([pet.pk])

    report = MemoryCascade().rewind("chat", chat["ok"].pk)

    assert report.items.stale == 0
    assert status(pet) == ItemStatus.LET_GO
