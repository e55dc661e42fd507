"""A fork's copies are extracted once per memory scope: a fork in its origin's scope
skips what its origins read (before or after it was made), what it reads counts as read
in them, turns added to it are read as in any thread, and a fork moved to another user is
extracted into that user's scope."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from cogitator_memory.items.models import Evidence, ExtractionWindow, MemoryItem
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry, Thread

pytestmark = pytest.mark.django_db

SAID_AT = datetime(2026, 3, 4, 15, 20, tzinfo=UTC)
LISBON = json.dumps(
    [
        {
            "kind": "fact",
            "subject": "Ana",
            "attribute": "home city",
            "value": "Lisbon",
            "confidence": 0.9,
            "quotes": [{"message": 1, "text": "I moved to Lisbon"}],
        }
    ]
)


def no_model() -> ScriptedModel:
    """A model with no answer: a call to it fails the test."""
    return ScriptedModel([])


@pytest.fixture
def origin() -> Thread:
    thread = threads.create_thread("concierge", {"userId": "ana"}, thread_id="trip")
    threads.add_entry(
        thread.pk, role="user", content="I moved to Lisbon yesterday.", created_at=SAID_AT
    )
    threads.add_entry(thread.pk, role="assistant", content="Welcome to Lisbon!")
    return thread


def leaf(thread_id: str) -> str:
    leaf_id = Thread.objects.values_list("active_leaf_id", flat=True).get(pk=thread_id)
    assert leaf_id is not None
    return leaf_id


def items_of(user_id: str) -> list[str]:
    return sorted(
        MemoryItem.objects.filter(agent_id="concierge", user_id=user_id).values_list(
            "value", flat=True
        )
    )


def test_a_fork_of_an_extracted_thread_reads_nothing_again(origin: Thread) -> None:
    # given the origin extracted: one item
    first = extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    assert (first.calls, first.items) == (1, 1)
    # when it is forked and the fork extracted
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="trip-fork")
    model = no_model()
    done = extract_thread(fork.pk, summarize=model)
    # then no window was read, no model called, and the scope still holds one item
    assert (done.windows, done.calls, done.items) == (0, 0, 0)
    assert done.skipped == 1
    assert model.calls == []
    assert items_of("ana") == ["Lisbon"]


def test_a_turn_added_to_the_fork_is_read_alone(origin: Thread) -> None:
    extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="trip-fork")
    extract_thread(fork.pk, summarize=no_model())
    # when
    threads.add_entry(fork.pk, role="user", content="Book me an aisle seat to Porto.")
    model = ScriptedModel(["[]"])
    done = extract_thread(fork.pk, summarize=model)
    # then
    assert (done.windows, done.calls) == (1, 1)
    [call] = model.calls
    assert "aisle seat" in call.text
    assert "moved to Lisbon" not in call.text
    assert items_of("ana") == ["Lisbon"]


def test_a_fork_made_inside_a_window_of_its_origin_reads_nothing_again(
    origin: Thread,
) -> None:
    # given the origin read its two turns in one window
    extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    assert ExtractionWindow.objects.filter(thread_id=origin.pk).count() == 1
    # when a fork is made at the first of them
    [first_turn] = Entry.objects.filter(thread_id=origin.pk, role="user")
    fork = threads.fork_thread(origin.pk, first_turn.pk, new_thread_id="trip-fork")
    done = extract_thread(fork.pk, summarize=no_model())
    # then
    assert (done.windows, done.calls, done.items) == (0, 0, 0)


def test_an_origin_extracted_after_its_fork_was_made_counts_for_the_fork(
    origin: Thread,
) -> None:
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="trip-fork")
    extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    done = extract_thread(fork.pk, summarize=no_model())
    assert (done.windows, done.calls, done.items) == (0, 0, 0)
    assert items_of("ana") == ["Lisbon"]


def test_what_a_fork_read_counts_for_its_origin_and_its_other_forks(origin: Thread) -> None:
    # given two forks of a thread not extracted yet
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="trip-fork")
    sibling = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="trip-sibling")
    # when the first fork is extracted first
    read = extract_thread(fork.pk, summarize=ScriptedModel([LISBON]))
    assert (read.calls, read.items) == (1, 1)
    # then neither the origin nor the other fork reads those turns again
    for thread_id in (origin.pk, sibling.pk):
        done = extract_thread(thread_id, summarize=no_model())
        assert (done.windows, done.calls, done.items) == (0, 0, 0), thread_id
    assert items_of("ana") == ["Lisbon"]
    # and the origin's record of it is a window of no calls and no items
    [recorded] = ExtractionWindow.objects.filter(thread_id=origin.pk)
    assert (recorded.calls, recorded.items_written) == (0, 0)


def test_a_fork_of_a_fork_reads_nothing_its_first_origin_read(origin: Thread) -> None:
    extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="trip-fork")
    grandchild = threads.fork_thread(fork.pk, leaf(fork.pk), new_thread_id="trip-fork-2")
    done = extract_thread(grandchild.pk, summarize=no_model())
    assert (done.windows, done.calls, done.items) == (0, 0, 0)


def test_a_fork_moved_to_another_user_is_extracted_into_that_users_scope(
    origin: Thread,
) -> None:
    # given Ana's thread extracted, and a fork of it given to Bea
    extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="bea-trip")
    threads.update_thread(fork.pk, {"userId": "bea"})
    # when
    model = ScriptedModel([LISBON])
    done = extract_thread(fork.pk, summarize=model)
    # then the copies were read for Bea, into Bea's scope, and Ana's item stays hers
    assert (done.windows, done.calls, done.items) == (1, 1, 1)
    assert "moved to Lisbon" in model.calls[0].text
    assert items_of("bea") == ["Lisbon"]
    assert items_of("ana") == ["Lisbon"]
    # and what Bea's fork read counts for nothing in Ana's thread
    assert ExtractionWindow.objects.filter(thread_id=origin.pk).count() == 1


def test_a_fork_moved_to_another_user_reads_for_it_alone(origin: Thread) -> None:
    # given a fork given to Bea before anything was extracted
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="bea-trip")
    threads.update_thread(fork.pk, {"userId": "bea"})
    extract_thread(fork.pk, summarize=ScriptedModel([LISBON]))
    # when Ana's thread is extracted
    done = extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    # then it was read for Ana
    assert (done.windows, done.calls, done.items) == (1, 1, 1)
    assert items_of("ana") == ["Lisbon"] and items_of("bea") == ["Lisbon"]


class RacingModel:
    """A scripted model that lets another run happen while it answers."""

    provider = "scripted"
    model = "scripted"

    def __init__(self, answer: str, meanwhile: Callable[[], object]) -> None:
        self.scripted = ScriptedModel([answer])
        self.meanwhile = meanwhile

    def __call__(self, messages: Any, **options: Any) -> Any:
        self.meanwhile()
        return self.scripted(messages, **options)


@pytest.mark.parametrize("fork_at", ["the last turn", "the first turn"])
def test_a_fork_racing_its_origin_writes_nothing_the_origin_wrote(
    origin: Thread, fork_at: str
) -> None:
    # given a fork made before anything was extracted
    [first_turn] = Entry.objects.filter(thread_id=origin.pk, role="user")
    at = leaf(origin.pk) if fork_at == "the last turn" else first_turn.pk
    fork = threads.fork_thread(origin.pk, at, new_thread_id="trip-fork")

    def origin_runs() -> None:
        extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))

    # when the origin is extracted while the model answers the fork's run
    done = extract_thread(fork.pk, summarize=RacingModel(LISBON, origin_runs))
    # then the fork's window was read by the origin's run, and one item stands on one quote
    assert (done.windows, done.skipped, done.items) == (1, 1, 0)
    assert items_of("ana") == ["Lisbon"]
    assert Evidence.objects.count() == 1
    assert not ExtractionWindow.objects.filter(thread_id=fork.pk).exists()


def test_an_origin_racing_its_fork_writes_nothing_the_fork_wrote(origin: Thread) -> None:
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="trip-fork")

    def fork_runs() -> None:
        extract_thread(fork.pk, summarize=ScriptedModel([LISBON]))

    done = extract_thread(origin.pk, summarize=RacingModel(LISBON, fork_runs))
    assert (done.windows, done.skipped, done.items) == (1, 1, 0)
    assert items_of("ana") == ["Lisbon"]
    assert Evidence.objects.count() == 1


def test_a_thread_naming_an_origin_its_entries_are_not_of_is_read_whole(
    origin: Thread,
) -> None:
    # given the origin extracted, and a thread whose metadata says it is a fork of it but
    # whose entries name, as their originals, entries that are not the origin's
    extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    other = threads.create_thread("elsewhere", {"userId": "ana"}, thread_id="other")
    [other_entry] = [threads.add_entry(other.pk, role="user", content="Hello there.")]
    claims = threads.create_thread(
        "concierge",
        {"userId": "ana", "forkedFrom": {"threadId": origin.pk, "entryId": leaf(origin.pk)}},
        thread_id="claims",
    )
    for original in ("ent_missing", other_entry.pk):
        threads.add_entry(
            claims.pk,
            role="user",
            content="I moved to Lisbon yesterday.",
            metadata={"forkOf": original},
        )
    # when
    model = ScriptedModel(["[]"])
    done = extract_thread(claims.pk, summarize=model)
    # then it was read, and nothing was recorded in the thread it named
    assert (done.windows, done.calls) == (1, 1)
    assert ExtractionWindow.objects.filter(thread_id=origin.pk).count() == 1


def test_a_fork_moved_after_it_took_its_origins_reading_is_read_for_its_new_user(
    origin: Thread,
) -> None:
    # given a fork whose extraction read nothing, its origin having read it all
    extract_thread(origin.pk, summarize=ScriptedModel([LISBON]))
    fork = threads.fork_thread(origin.pk, leaf(origin.pk), new_thread_id="bea-trip")
    assert extract_thread(fork.pk, summarize=no_model()).calls == 0
    # when the fork is given to Bea and extracted again
    threads.update_thread(fork.pk, {"userId": "bea"})
    done = extract_thread(fork.pk, summarize=ScriptedModel([LISBON]))
    # then what Ana's thread read counts for Ana alone: the copies were read for Bea
    assert (done.windows, done.calls, done.items) == (1, 1, 1)
    assert items_of("bea") == ["Lisbon"]
