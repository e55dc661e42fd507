"""``delete_entries`` and ``redact_entries``: replies, events, copies in forks, summaries,
derived memory first and a second look."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from cogitator_memory import dependents
from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import NewEmbedding
from cogitator_memory.exceptions import EntryNotFound, InvalidInput
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread
from tests.factories import create_branch

pytestmark = pytest.mark.django_db


def say(thread_id: str, role: str, text: str, **fields: Any) -> Entry:
    return threads.add_entry(thread_id, role=role, content=text, **fields)


def standing(*entries: Entry) -> list[bool]:
    return [Entry.objects.filter(pk=entry.pk).exists() for entry in entries]


@pytest.fixture
def branched() -> dict[str, Entry]:
    """question -> answer A (-> model change -> tool result -> next question A)
    -> answer B (-> next question B), on two branches."""
    threads.create_thread("concierge", {"userId": "ana"}, thread_id="chat")
    before = say("chat", "user", "Hello.")
    hello_answer = say("chat", "assistant", "Hi.")
    question = say("chat", "user", "Where is my key?", name="Ana")
    answer_a = say("chat", "assistant", "In the locker.")
    change = threads.add_entry("chat", type="model_change", event={"model": "m2"})
    tool = threads.add_entry(
        "chat", type="tool_result", content="locker 12", tool_call_id="c1", name="look"
    )
    next_a = say("chat", "user", "Thanks.")
    answer_b = say("chat", "assistant", "In the drawer.", parent_id=question.pk)
    next_b = say("chat", "user", "Sure?")
    return {
        "before": before,
        "hello_answer": hello_answer,
        "question": question,
        "answer_a": answer_a,
        "change": change,
        "tool": tool,
        "next_a": next_a,
        "answer_b": answer_b,
        "next_b": next_b,
    }


def test_a_user_message_takes_its_replies_on_every_branch_up_to_the_next_user_message(
    branched: dict[str, Entry],
) -> None:
    e = branched

    report = MemoryCascade().delete_entries([e["question"].pk])

    assert (
        standing(e["question"], e["answer_a"], e["change"], e["tool"], e["answer_b"]) == [False] * 5
    )
    assert standing(e["before"], e["hello_answer"], e["next_a"], e["next_b"]) == [True] * 4
    assert set(report.entries.deleted) == {
        e[name].pk for name in ("question", "answer_a", "change", "tool", "answer_b")
    }
    # The next questions move up to the nearest entry that stays.
    for name in ("next_a", "next_b"):
        assert Entry.objects.get(pk=e[name].pk).parent_id == e["hello_answer"].pk
    assert report.threads_changed == ["chat"]


def test_keep_replies_leaves_them(branched: dict[str, Entry]) -> None:
    e = branched

    report = MemoryCascade().delete_entries([e["question"].pk], keep_replies=True)

    assert report.entries.deleted == [e["question"].pk]
    assert Entry.objects.get(pk=e["answer_a"].pk).parent_id == e["hello_answer"].pk


def test_an_answer_takes_no_replies(branched: dict[str, Entry]) -> None:
    e = branched

    report = MemoryCascade().delete_entries([e["answer_a"].pk])

    assert report.entries.deleted == [e["answer_a"].pk]
    assert Entry.objects.get(pk=e["change"].pk).parent_id == e["question"].pk


def test_redacting_redacts_the_messages_and_deletes_the_events_among_the_replies(
    branched: dict[str, Entry],
) -> None:
    e = branched

    report = MemoryCascade().redact_entries([e["question"].pk], reason="the user asked")

    assert report.entries.deleted == [e["change"].pk]
    assert set(report.entries.redacted) == {
        e[name].pk for name in ("question", "answer_a", "tool", "answer_b")
    }
    question = Entry.objects.get(pk=e["question"].pk)
    assert (question.content, question.name) == (REDACTED_TEXT, None)
    assert question.redaction is not None and question.redaction["reason"] == "the user asked"
    assert Entry.objects.get(pk=e["tool"].pk).content == REDACTED_TEXT
    # The redacted entries keep their places.
    assert Entry.objects.get(pk=e["tool"].pk).parent_id == e["answer_a"].pk


def test_an_event_among_the_ids_is_deleted_not_redacted(branched: dict[str, Entry]) -> None:
    e = branched

    report = MemoryCascade().redact_entries([e["change"].pk, e["answer_b"].pk])

    assert report.entries.deleted == [e["change"].pk]
    assert report.entries.redacted == [e["answer_b"].pk]


def test_unknown_ids_are_refused_before_anything_changes(branched: dict[str, Entry]) -> None:
    e = branched

    with pytest.raises(EntryNotFound):
        MemoryCascade().delete_entries([e["answer_a"].pk, "entry_missing"])

    assert standing(e["answer_a"]) == [True]
    report = MemoryCascade().delete_entries([e["answer_a"].pk, "entry_missing"], missing_ok=True)
    assert report.entries.deleted == [e["answer_a"].pk]


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidInput):
        MemoryCascade().delete_entries("entry_1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        MemoryCascade().redact_entries(["entry_1"], reason=5)  # type: ignore[arg-type]


# --- forks ---------------------------------------------------------------------------------


def test_copies_and_their_replies_go_in_forks_and_forks_of_forks(
    branched: dict[str, Entry],
) -> None:
    e = branched
    threads.fork_thread("chat", e["tool"].pk, "fork")
    reply_in_fork = say("fork", "assistant", "Also: locker 12 is blue.")
    threads.fork_thread("fork", reply_in_fork.pk, "fork2")
    later_in_fork2 = say("fork2", "user", "New question.")

    report = MemoryCascade().delete_entries([e["question"].pk])

    # Only the copies of what went before it, and the reply written in the fork, go.
    assert [str(x.content) for x in Entry.objects.filter(thread_id="fork").order_by("seq")] == [
        "Hello.",
        "Hi.",
    ]
    assert [str(x.content) for x in Entry.objects.filter(thread_id="fork2").order_by("seq")] == [
        "Hello.",
        "Hi.",
        "New question.",
    ]
    assert Entry.objects.get(pk=later_in_fork2.pk).parent_id is not None
    assert set(report.threads_changed) == {"chat", "fork", "fork2"}
    assert len(report.entries.deleted) == 5 + 5 + 5  # question, 3 replies + answer B / copies


def test_redacting_redacts_the_copies_in_forks(branched: dict[str, Entry]) -> None:
    e = branched
    threads.fork_thread("chat", e["answer_a"].pk, "fork")

    MemoryCascade().redact_entries([e["question"].pk], keep_replies=True)

    copy = Entry.objects.get(thread_id="fork", metadata__forkOf=e["question"].pk)
    assert copy.content == REDACTED_TEXT
    other = Entry.objects.get(thread_id="fork", metadata__forkOf=e["answer_a"].pk)
    assert other.content == "In the locker."


def test_a_fork_not_listed_by_its_origin_is_not_searched(branched: dict[str, Entry]) -> None:
    e = branched
    threads.fork_thread("chat", e["answer_a"].pk, "fork")
    origin = Thread.objects.get(pk="chat")
    origin.metadata = {"userId": "ana"}  # a client replaced the metadata
    origin.save()

    MemoryCascade().delete_entries([e["question"].pk])

    assert Entry.objects.filter(thread_id="fork", metadata__forkOf=e["question"].pk).exists()


# --- summaries -----------------------------------------------------------------------------


def compaction(thread_id: str, first_kept: Entry | None, covered_to: Entry, **event: Any) -> Entry:
    return threads.add_entry(
        thread_id,
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


def test_a_summary_covering_a_deleted_entry_goes_and_one_keeping_it_stays() -> None:
    threads.create_thread("concierge", thread_id="long")
    first = say("long", "user", "One.")
    second = say("long", "assistant", "Two.")
    third = say("long", "user", "Three.")
    fourth = say("long", "assistant", "Four.")
    covering = compaction("long", third, second)
    after = say("long", "user", "Five.")

    # The kept tail (third) is not covered: the summary stays.
    kept = MemoryCascade().delete_entries([fourth.pk])
    assert kept.summaries == []
    assert standing(covering) == [True]

    # The first entry is covered: the summary goes, the thread moves on.
    report = MemoryCascade().delete_entries([first.pk], keep_replies=True)
    assert report.summaries == [covering.pk]
    assert standing(covering, after) == [False, True]
    assert Entry.objects.get(pk=after.pk).parent_id == third.pk
    assert Thread.objects.get(pk="long").active_leaf_id == after.pk


def test_derived_memory_goes_before_the_entries(branched: dict[str, Entry]) -> None:
    e = branched
    seen: list[bool] = []

    class Watching:
        name = "watching"
        models: tuple[type[Any], ...] = ()

        def entries_added(self, entries: Any) -> None:
            pass

        def forget_entries(self, entry_ids: Sequence[str], forgotten: Any) -> None:
            seen.append(Entry.objects.filter(pk__in=list(entry_ids)).count() == len(entry_ids))

        def owner_changed(self, *args: Any) -> None:
            pass

    dependents.register(Watching())
    try:
        MemoryCascade().delete_entries([e["question"].pk])
    finally:
        dependents._dependents.pop("watching")
    # The first look sees every entry still there; the second, after them, sees none.
    assert seen[0] is True
    assert seen[-1] is False


@pytest.fixture
def writes_a_vector_meanwhile() -> Iterator[None]:
    """A store that, the first time it is told entries go, writes a vector of one of them
    (as a task embedding it would, between the first look and the deletion)."""

    class Meanwhile:
        name = "meanwhile"
        models: tuple[type[Any], ...] = ()
        done = False

        def entries_added(self, entries: Any) -> None:
            pass

        def forget_entries(self, entry_ids: Sequence[str], forgotten: Any) -> None:
            if self.done:
                return
            self.done = True
            get_embedding_store().add(
                [
                    NewEmbedding(
                        source_type="message",
                        source_id=entry_ids[0],
                        vector=[1.0, 0.0],
                        content="written meanwhile",
                        metadata={"index": "messages"},
                    )
                ]
            )

        def owner_changed(self, *args: Any) -> None:
            pass

    dependents.register(Meanwhile())
    yield
    dependents._dependents.pop("meanwhile")


def test_a_vector_written_meanwhile_goes_in_the_second_look(
    branched: dict[str, Entry], writes_a_vector_meanwhile: None
) -> None:
    e = branched

    report = MemoryCascade().delete_entries([e["answer_b"].pk])

    assert not Embedding.objects.filter(content="written meanwhile").exists()
    assert report.vectors == 1


def test_a_long_thread_and_many_entries_go_in_chunks() -> None:
    thread = threads.create_thread("concierge", {"userId": "ana"}, thread_id="long")
    entries = create_branch(thread, 6000, role="assistant")
    threads.fork_thread("long", entries[-1].pk, "long-fork")

    report = MemoryCascade().delete_entries([entry.pk for entry in entries[:3000]])
    assert len(report.entries.deleted) == 6000  # and their copies in the fork
    assert Entry.objects.get(pk=entries[3000].pk).parent_id is None

    report = MemoryCascade().delete_thread("long")
    assert len(report.entries.deleted) == 6000
    assert Entry.objects.filter(thread_id="long-fork").count() == 0


def test_an_id_no_database_can_hold_is_a_missing_one() -> None:
    with pytest.raises(EntryNotFound):
        MemoryCascade().delete_entries(["entry\x00"])
    assert MemoryCascade().delete_entries(["entry\x00"], missing_ok=True).is_empty()
