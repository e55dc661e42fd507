"""``services.delete_entries``: many entries of one thread spliced out in one step."""

from __future__ import annotations

import pytest

from cogitator_memory.exceptions import ThreadNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

pytestmark = pytest.mark.django_db


def parent(entry: Entry) -> str | None:
    return Entry.objects.get(pk=entry.pk).parent_id


def test_children_move_to_their_nearest_ancestor_that_stays() -> None:
    services.create_thread("a", thread_id="t")
    one = services.add_entry("t", role="user", content="1")
    two = services.add_entry("t", role="assistant", content="2")
    three = services.add_entry("t", role="user", content="3")
    four = services.add_entry("t", role="assistant", content="4")
    side = services.add_entry("t", role="assistant", content="side", parent_id=three.pk)

    services.delete_entries("t", [two.pk, three.pk])

    assert (parent(four), parent(side)) == (one.pk, one.pk)
    # one has two children now: the thread's first fork is there.
    assert Thread.objects.get(pk="t").fork_seq == one.seq
    assert Thread.objects.get(pk="t").active_leaf_id == side.pk


def test_the_active_leaf_moves_up_and_roots_appear() -> None:
    services.create_thread("a", thread_id="t")
    one = services.add_entry("t", role="user", content="1")
    two = services.add_entry("t", role="assistant", content="2")
    three = services.add_entry("t", role="user", content="3")
    other_root = services.add_entry("t", role="user", content="r", parent_id=None)
    services.checkout("t", three.pk)

    services.delete_entries("t", [one.pk, two.pk, three.pk, "entry_not_here"])

    thread = Thread.objects.get(pk="t")
    assert thread.active_leaf_id is None
    assert list(Entry.objects.filter(thread_id="t").values_list("pk", flat=True)) == [other_root.pk]


def test_entries_of_another_thread_are_skipped_and_grants_hold() -> None:
    services.create_thread("a", {"userId": "ana"}, thread_id="t")
    services.create_thread("a", thread_id="u")
    mine = services.add_entry("u", role="user", content="u")

    assert services.delete_entries("t", [mine.pk]) == {}
    assert Entry.objects.filter(pk=mine.pk).exists()
    with pytest.raises(ThreadNotFound):
        services.delete_entries("t", [], grants=Grants.for_agents(["a"], {"a": ["bea"]}))
