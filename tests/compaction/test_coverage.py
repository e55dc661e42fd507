"""``summaries_standing_on``: the compaction entries that cover or quote given entries."""

from __future__ import annotations

from typing import Any

import pytest

from cogitator_memory.compaction.coverage import quoted_entry_ids, summaries_standing_on
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db


def say(text: str, **fields: Any) -> Entry:
    return threads.add_entry("chat", role="user", content=text, **fields)


def compaction(first_kept: Entry | None, covered_to: Entry, **event: Any) -> Entry:
    return threads.add_entry(
        "chat",
        type="compaction",
        role="system",
        event={
            "strategy": "summary",
            "summary": "so far",
            "first_kept_entry_id": first_kept.pk if first_kept else None,
            "covered_to_entry_id": covered_to.pk,
            **event,
        },
    )


@pytest.fixture
def chat() -> None:
    threads.create_thread("concierge", thread_id="chat")


def test_a_summary_covers_the_entries_before_its_first_kept_one(chat: None) -> None:
    one, two, three = say("one"), say("two"), say("three")
    summary = compaction(three, two)
    four = say("four")

    assert summaries_standing_on("chat", [one.pk]) == [summary.pk]
    assert summaries_standing_on("chat", [two.pk]) == [summary.pk]
    assert summaries_standing_on("chat", [three.pk]) == []
    assert summaries_standing_on("chat", [four.pk]) == []
    assert summaries_standing_on("chat", [summary.pk]) == []


def test_when_the_first_kept_entry_is_gone_those_up_to_the_last_left_out(chat: None) -> None:
    one, two, three = say("one"), say("two"), say("three")
    summary = compaction(three, two)
    threads.delete_entry(three.pk)
    four = say("four")

    assert summaries_standing_on("chat", [two.pk]) == [summary.pk]
    assert summaries_standing_on("chat", [four.pk]) == []
    assert summaries_standing_on("chat", [one.pk]) == [summary.pk]


def test_when_both_are_gone_every_entry_before_the_summary(chat: None) -> None:
    one, two, three = say("one"), say("two"), say("three")
    summary = compaction(three, two)
    threads.delete_entry(three.pk)
    threads.delete_entry(two.pk)

    assert summaries_standing_on("chat", [one.pk]) == [summary.pk]


def test_a_newer_summary_folds_the_older_one_in(chat: None) -> None:
    one, two = say("one"), say("two")
    first = compaction(two, one)
    three, four = say("three"), say("four")
    second = compaction(four, three)

    assert summaries_standing_on("chat", [one.pk]) == [first.pk, second.pk]
    assert summaries_standing_on("chat", [three.pk]) == [second.pk]


def test_an_entry_of_another_branch_is_not_covered(chat: None) -> None:
    one, two = say("one"), say("two")
    side = say("side", parent_id=one.pk)
    threads.checkout("chat", two.pk)
    three = say("three")
    summary = compaction(three, two)

    assert summaries_standing_on("chat", [side.pk]) == []
    assert summaries_standing_on("chat", [one.pk]) == [summary.pk]


def test_a_summary_quoting_an_entry_in_an_atom_stands_on_it(chat: None) -> None:
    one, two, three = say("one"), say("two"), say("three")
    levels = {
        "version": 1,
        "saga": None,
        "arcs": [],
        "chapters": [
            {
                "from": one.pk,
                "to": two.pk,
                "atoms": [{"kind": "fact", "evidence": [{"entry": three.pk, "quote": "three"}]}],
            }
        ],
    }
    summary = compaction(three, two, levels=levels)

    assert quoted_entry_ids(summary.event) == {three.pk}
    assert summaries_standing_on("chat", [three.pk]) == [summary.pk]


def test_a_fork_of_a_compacted_branch_names_its_own_copies(chat: None) -> None:
    one, two, three = say("one"), say("two"), say("three")
    compaction(three, two)
    tail = say("four")
    threads.fork_thread("chat", tail.pk, "fork")

    copy = Entry.objects.get(thread_id="fork", type="compaction")
    copies = dict(Entry.objects.filter(thread_id="fork").values_list("metadata__forkOf", "pk"))
    assert copy.event["first_kept_entry_id"] == copies[three.pk]
    assert copy.event["covered_to_entry_id"] == copies[two.pk]
    assert summaries_standing_on("fork", [copies[one.pk]]) == [copy.pk]
    assert summaries_standing_on("fork", [copies[tail.pk]]) == []
