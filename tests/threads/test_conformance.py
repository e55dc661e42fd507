"""The store contracts of the spec ("Thread Operations", "Entry Operations", "Threads as
Trees"), checked on whichever database the suite runs on: the same module runs on SQLite
and on PostgreSQL, so both keep one contract."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from cogitator_memory.exceptions import (
    EntryNotFound,
    PartialEntryNotSaveable,
    ThreadAgentMismatch,
    ThreadNotFound,
)
from cogitator_memory.threads import selectors, services
from cogitator_memory.threads.models import Entry, EntryType, Thread

pytestmark = pytest.mark.django_db

AGENT = "agent-1"
MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def say(thread_id: str, text: str | list[Any], **fields: Any) -> Entry:
    fields.setdefault("role", "user")
    return services.add_entry(thread_id, content=text, **fields)


def ids_of(entries: list[Entry]) -> list[str]:
    return [entry.id for entry in entries]


def thread_ids_of(page: selectors.ThreadPage) -> list[str]:
    return [thread.id for thread in page.threads]


def set_updated_at(thread_id: str, moment: datetime) -> None:
    Thread.objects.filter(pk=thread_id).update(updated_at=moment)


def stored_thread(thread_id: str) -> Thread:
    thread = selectors.get_thread(thread_id)
    assert thread is not None
    return thread


def stored_entry(entry_id: str) -> Entry:
    entry = selectors.get_entry(entry_id)
    assert entry is not None
    return entry


def run_in_threads(workers: list[Callable[[], None]]) -> None:
    """Run each worker in its own Python thread (its own connection) and re-raise the
    first error any of them hit."""
    errors: list[BaseException] = []

    def guarded(worker: Callable[[], None]) -> None:
        try:
            worker()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=guarded, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads), "a writer did not finish"
    if errors:
        raise errors[0]


# --- add_entry into a missing thread ---------------------------------------------------


def test_add_entry_into_a_missing_thread_fails_and_writes_nothing() -> None:
    # given
    services.create_thread(AGENT, thread_id="present")

    # when
    with pytest.raises(ThreadNotFound) as caught:
        say("missing-thread", "Hello")

    # then
    assert str(caught.value) == "Thread not found: 'missing-thread'"
    assert caught.value.thread_id == "missing-thread"
    assert Entry.objects.count() == 0
    assert list(Thread.objects.values_list("id", flat=True)) == ["present"]


# --- update_thread ---------------------------------------------------------------------


def test_update_thread_merges_the_given_keys_into_the_stored_metadata() -> None:
    # given
    thread = services.create_thread(AGENT, {"topic": "support", "status": "open"})

    # when
    returned = services.update_thread(thread.id, {"status": "resolved", "priority": 2})

    # then
    expected = {"topic": "support", "status": "resolved", "priority": 2}
    assert returned.metadata == expected
    assert stored_thread(thread.id).metadata == expected


def test_update_thread_with_replace_keeps_only_the_given_keys() -> None:
    # given
    thread = services.create_thread(AGENT, {"topic": "support", "status": "open"})

    # when
    services.update_thread(thread.id, {"status": "resolved"}, replace=True)

    # then
    assert stored_thread(thread.id).metadata == {"status": "resolved"}


def test_update_thread_of_a_missing_thread_fails() -> None:
    # when
    with pytest.raises(ThreadNotFound) as caught:
        services.update_thread("missing-thread", {"status": "resolved"})

    # then
    assert str(caught.value) == "Thread not found: 'missing-thread'"
    assert Thread.objects.count() == 0


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_update_thread_calls_of_different_keys_both_survive() -> None:
    # given
    thread = services.create_thread(AGENT, {"topic": "support"})
    first_wrote = threading.Event()

    def first_writer() -> None:
        try:
            with transaction.atomic():
                services.update_thread(thread.id, {"first": 1})
                first_wrote.set()
                # The transaction stays open while the second writer runs: a merge that
                # read the metadata without waiting for the row lock would drop "first".
                time.sleep(0.3)
        finally:
            first_wrote.set()

    def second_writer() -> None:
        first_wrote.wait(timeout=10)
        services.update_thread(thread.id, {"second": 2})

    # when
    run_in_threads([first_writer, second_writer])

    # then
    assert stored_thread(thread.id).metadata == {"topic": "support", "first": 1, "second": 2}


# --- insertion order under one created_at ----------------------------------------------


@pytest.fixture
def same_moment_entries() -> tuple[str, list[str]]:
    """A thread of 40 entries written one after another with one created_at."""
    thread = services.create_thread(AGENT)
    written = [say(thread.id, f"message {n}", created_at=MOMENT).id for n in range(40)]
    return thread.id, written


def test_get_entries_keeps_insertion_order_of_entries_with_one_created_at(
    same_moment_entries: tuple[str, list[str]],
) -> None:
    # given
    thread_id, written = same_moment_entries

    # when
    entries = selectors.get_entries(thread_id)

    # then
    assert ids_of(entries) == written


def test_get_entries_with_a_limit_keeps_the_newest_inserted_of_one_created_at(
    same_moment_entries: tuple[str, list[str]],
) -> None:
    # given
    thread_id, written = same_moment_entries

    # when
    entries = selectors.get_entries(thread_id, limit=15)

    # then
    assert ids_of(entries) == written[-15:]


def test_get_path_keeps_insertion_order_of_entries_with_one_created_at(
    same_moment_entries: tuple[str, list[str]],
) -> None:
    # given
    thread_id, written = same_moment_entries

    # when
    full = selectors.get_path(thread_id)
    newest = selectors.get_path(thread_id, limit=15)

    # then
    assert ids_of(full) == written
    assert ids_of(newest) == written[-15:]


# --- fields never set are absent -------------------------------------------------------

ALWAYS_PRESENT = {"id", "thread_id", "parent_id", "seq", "type", "token_count", "created_at"}
PLAIN_MESSAGE_KEYS = ALWAYS_PRESENT | {"role", "content"}


def test_entry_fields_never_set_are_absent_from_as_dict() -> None:
    # given
    thread = services.create_thread(AGENT)

    # when
    entry = say(thread.id, "Hello")

    # then
    assert set(entry.as_dict()) == PLAIN_MESSAGE_KEYS
    assert set(stored_entry(entry.id).as_dict()) == PLAIN_MESSAGE_KEYS
    assert set(selectors.get_entries(thread.id)[0].as_dict()) == PLAIN_MESSAGE_KEYS
    assert set(selectors.get_path(thread.id)[0].as_dict()) == PLAIN_MESSAGE_KEYS


def test_entry_fields_that_were_set_come_back_present_in_as_dict() -> None:
    # given
    thread = services.create_thread(AGENT)
    calls = [{"id": "call-1", "name": "lookup", "arguments": '{"q": "rome"}'}]
    asked = services.add_entry(
        thread.id,
        role="assistant",
        content="Looking it up",
        name="planner",
        tool_calls=calls,
        metadata={"source": "test"},
    )
    answered = services.add_entry(
        thread.id,
        type=EntryType.TOOL_RESULT,
        content="Rome is in Italy",
        tool_call_id="call-1",
        tool_results=[{"callId": "call-1", "result": "Rome is in Italy"}],
    )
    labelled = services.add_entry(thread.id, type=EntryType.LABEL, event={"label": "checkpoint"})

    # when
    read = {
        e.id: e.as_dict()
        for e in selectors.get_entries(thread.id, types="all", include_tool_calls=True)
    }

    # then
    assert read[asked.id]["name"] == "planner"
    assert read[asked.id]["tool_calls"] == calls
    assert read[asked.id]["metadata"] == {"source": "test"}
    assert read[answered.id]["role"] == "tool"
    assert read[answered.id]["tool_call_id"] == "call-1"
    assert read[answered.id]["tool_results"] == [{"callId": "call-1", "result": "Rome is in Italy"}]
    assert read[labelled.id]["event"] == {"label": "checkpoint"}
    assert "content" not in read[labelled.id]
    assert "role" not in read[labelled.id]


def test_entry_fields_set_to_empty_values_stay_present_in_as_dict() -> None:
    # given
    thread = services.create_thread(AGENT)
    entry = services.add_entry(
        thread.id, role="assistant", content="", tool_calls=[], metadata={}, token_count=0
    )

    # when
    data = selectors.get_entries(thread.id, include_tool_calls=True)[0].as_dict()

    # then
    assert data["content"] == ""
    assert data["tool_calls"] == []
    assert data["metadata"] == {}
    assert data["token_count"] == 0
    assert data["id"] == entry.id


# --- returned objects are copies -------------------------------------------------------


def test_mutating_a_returned_thread_metadata_changes_neither_the_store_nor_a_later_read() -> None:
    # given
    created = services.create_thread(AGENT, {"topic": "support", "tags": ["a"]})
    read = stored_thread(created.id)

    # when
    created.metadata["topic"] = "changed"
    created.metadata["tags"].append("b")
    read.metadata["added"] = True
    read.as_dict()["metadata"]["topic"] = "changed again"

    # then
    assert stored_thread(created.id).metadata == {"topic": "support", "tags": ["a"]}


def test_mutating_a_returned_entry_content_changes_neither_the_store_nor_a_later_read() -> None:
    # given
    thread = services.create_thread(AGENT)
    written = say(thread.id, [{"type": "text", "text": "Hello"}])
    read = selectors.get_entries(thread.id)[0]
    assert isinstance(written.content, list)
    assert isinstance(read.content, list)

    # when
    written.content[0]["text"] = "changed"
    read.content.append({"type": "text", "text": "added"})
    stored_entry(written.id).as_dict()["content"].clear()

    # then
    assert stored_entry(written.id).content == [{"type": "text", "text": "Hello"}]
    assert selectors.get_entries(thread.id)[0].content == [{"type": "text", "text": "Hello"}]


def test_mutating_the_metadata_given_to_create_thread_afterwards_changes_nothing() -> None:
    # given
    given: dict[str, Any] = {"topic": "support", "tags": ["a"]}
    thread = services.create_thread(AGENT, given)

    # when
    given["topic"] = "changed"
    given["tags"].append("b")

    # then
    assert thread.metadata == {"topic": "support", "tags": ["a"]}
    assert stored_thread(thread.id).metadata == {"topic": "support", "tags": ["a"]}


def test_mutating_the_fields_given_to_add_entry_afterwards_changes_no_later_read() -> None:
    # given
    thread = services.create_thread(AGENT)
    content: list[Any] = [{"type": "text", "text": "Hello"}]
    metadata: dict[str, Any] = {"source": "test"}
    entry = services.add_entry(thread.id, role="user", content=content, metadata=metadata)

    # when
    content[0]["text"] = "changed"
    content.append({"type": "text", "text": "added"})
    metadata["source"] = "changed"

    # then
    stored = stored_entry(entry.id)
    assert stored.content == [{"type": "text", "text": "Hello"}]
    assert stored.metadata == {"source": "test"}


def test_the_entry_add_entry_returns_shares_nothing_with_the_fields_given() -> None:
    # given
    thread = services.create_thread(AGENT)
    content: list[Any] = [{"type": "text", "text": "Hello"}]
    calls: list[dict[str, Any]] = [{"id": "call-1", "name": "lookup", "arguments": "{}"}]
    event: dict[str, Any] = {"label": "checkpoint"}
    message = services.add_entry(thread.id, role="assistant", content=content, tool_calls=calls)
    label = services.add_entry(thread.id, type=EntryType.LABEL, event=event)

    # when
    content[0]["text"] = "changed"
    calls[0]["name"] = "changed"
    event["label"] = "changed"

    # then
    assert message.content == [{"type": "text", "text": "Hello"}]
    assert message.tool_calls == [{"id": "call-1", "name": "lookup", "arguments": "{}"}]
    assert label.event == {"label": "checkpoint"}


# --- create_thread with an explicit id: upsert -----------------------------------------


def test_create_thread_with_an_existing_id_keeps_its_entries_and_created_at() -> None:
    # given
    original = services.create_thread(AGENT, {"topic": "support"}, thread_id="run-thread")
    first = say(original.id, "Hello")
    second = say(original.id, "Anyone there?")

    # when
    upserted = services.create_thread(AGENT, {"run": 2}, thread_id="run-thread")

    # then
    stored = stored_thread("run-thread")
    assert upserted.created_at == original.created_at
    assert stored.created_at == original.created_at
    assert ids_of(selectors.get_entries("run-thread")) == [first.id, second.id]
    assert stored.active_leaf_id == second.id
    assert stored.next_seq == 2
    assert Thread.objects.count() == 1


def test_create_thread_with_an_existing_id_merges_the_metadata() -> None:
    # given
    services.create_thread(AGENT, {"topic": "support", "run": 1}, thread_id="run-thread")

    # when
    upserted = services.create_thread(AGENT, {"run": 2, "user": "u-1"}, thread_id="run-thread")

    # then
    expected = {"topic": "support", "run": 2, "user": "u-1"}
    assert upserted.metadata == expected
    assert stored_thread("run-thread").metadata == expected


def test_create_thread_with_the_id_of_another_agents_thread_fails_and_changes_nothing() -> None:
    # given
    services.create_thread("agent-a", {"topic": "support"}, thread_id="shared-id")

    # when
    with pytest.raises(ThreadAgentMismatch) as caught:
        services.create_thread("agent-b", {"topic": "stolen"}, thread_id="shared-id")

    # then
    assert str(caught.value) == "Thread 'shared-id' belongs to agent 'agent-a', not 'agent-b'."
    stored = stored_thread("shared-id")
    assert (stored.agent_id, stored.metadata) == ("agent-a", {"topic": "support"})


# --- updated_at ------------------------------------------------------------------------


def test_create_thread_sets_updated_at_to_the_moment_of_creation() -> None:
    # given
    before = timezone.now()

    # when
    thread = services.create_thread(AGENT)

    # then
    after = timezone.now()
    assert before <= stored_thread(thread.id).updated_at <= after


def test_update_thread_moves_updated_at_to_the_moment_of_the_update() -> None:
    # given
    thread = services.create_thread(AGENT)
    set_updated_at(thread.id, MOMENT)
    before = timezone.now()

    # when
    services.update_thread(thread.id, {"status": "resolved"})

    # then
    assert before <= stored_thread(thread.id).updated_at <= timezone.now()


def test_upsert_of_an_existing_thread_moves_updated_at_to_the_moment_of_the_upsert() -> None:
    # given
    thread = services.create_thread(AGENT, thread_id="run-thread")
    set_updated_at(thread.id, MOMENT)
    before = timezone.now()

    # when
    services.create_thread(AGENT, {"run": 2}, thread_id="run-thread")

    # then
    assert before <= stored_thread(thread.id).updated_at <= timezone.now()


def _add(thread_id: str, entries: dict[str, str]) -> None:
    say(thread_id, "One more")


def _delete_leaf(thread_id: str, entries: dict[str, str]) -> None:
    services.delete_entry(entries["answer"])


def _rewind(thread_id: str, entries: dict[str, str]) -> None:
    services.rewind(thread_id, entries["question"])


def _checkout(thread_id: str, entries: dict[str, str]) -> None:
    services.checkout(thread_id, entries["retry"])


def _redact(thread_id: str, entries: dict[str, str]) -> None:
    services.redact_entry(entries["question"])


def _clear(thread_id: str, entries: dict[str, str]) -> None:
    services.clear_thread(thread_id)


@pytest.mark.parametrize(
    "operation",
    [_add, _delete_leaf, _rewind, _checkout, _redact, _clear],
    ids=["add_entry", "delete_entry", "rewind", "checkout", "redact_entry", "clear_thread"],
)
def test_entry_operations_leave_the_thread_updated_at_alone(
    operation: Callable[[str, dict[str, str]], None],
) -> None:
    # given
    thread = services.create_thread(AGENT)
    question = say(thread.id, "Plan a day in Rome")
    answer = say(thread.id, "Start at the Colosseum", role="assistant")
    retry = say(
        thread.id, "Start at the Vatican", role="assistant", parent_id=question.id, activate=False
    )
    set_updated_at(thread.id, MOMENT)

    # when
    operation(thread.id, {"question": question.id, "answer": answer.id, "retry": retry.id})

    # then
    assert stored_thread(thread.id).updated_at == MOMENT


# --- list_threads ----------------------------------------------------------------------


def test_list_threads_returns_the_most_recently_updated_first() -> None:
    # given
    for name, offset in (("middle", 1), ("newest", 2), ("oldest", 0)):
        services.create_thread(AGENT, thread_id=name)
        set_updated_at(name, MOMENT + offset * HOUR)

    # when
    page = selectors.list_threads()

    # then
    assert thread_ids_of(page) == ["newest", "middle", "oldest"]
    assert page.next_cursor is None


def test_update_thread_moves_the_thread_to_the_front_of_list_threads() -> None:
    # given
    for name, offset in (("older", 0), ("newer", 1)):
        services.create_thread(AGENT, thread_id=name)
        set_updated_at(name, MOMENT + offset * HOUR)

    # when
    services.update_thread("older", {"status": "resolved"})

    # then
    assert thread_ids_of(selectors.list_threads()) == ["older", "newer"]


def test_list_threads_pages_through_equal_updated_at_once_each() -> None:
    # given
    names = [f"thread-{n}" for n in range(7)]
    for name in names:
        services.create_thread(AGENT, thread_id=name)
    Thread.objects.update(updated_at=MOMENT)
    whole = thread_ids_of(selectors.list_threads(limit=100))

    # when
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = selectors.list_threads(limit=3, cursor=cursor)
        pages.append(thread_ids_of(page))
        cursor = page.next_cursor
        if cursor is None:
            break

    # then
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [name for page in pages for name in page] == whole
    assert sorted(whole) == names


def test_list_threads_gives_no_next_cursor_when_the_page_holds_the_last_thread() -> None:
    # given
    for n in range(3):
        services.create_thread(AGENT, thread_id=f"thread-{n}")

    # when
    first = selectors.list_threads(limit=2)
    last = selectors.list_threads(limit=2, cursor=first.next_cursor)

    # then
    assert first.next_cursor is not None
    assert len(last.threads) == 1
    assert last.next_cursor is None


def test_list_threads_filters_by_agent() -> None:
    # given
    for name, agent in (("a-1", "agent-a"), ("a-2", "agent-a"), ("b-1", "agent-b"), ("c-1", "c")):
        services.create_thread(agent, thread_id=name)

    # when
    one = selectors.list_threads(agent_id="agent-a")
    several = selectors.list_threads(agent_ids=["agent-b", "c"])

    # then
    assert sorted(thread_ids_of(one)) == ["a-1", "a-2"]
    assert sorted(thread_ids_of(several)) == ["b-1", "c-1"]


@pytest.fixture
def typed_metadata_threads() -> None:
    """One thread per JSON value of metadata key "v"; one thread without the key."""
    values: dict[str, Any] = {
        "int-one": 1,
        "float-one": 1.0,
        "text-one": "1",
        "true": True,
        "false": False,
        "zero": 0,
        "null": None,
    }
    for name, value in values.items():
        services.create_thread(AGENT, {"v": value}, thread_id=name)
    services.create_thread(AGENT, {"other": 1}, thread_id="no-key")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, ["float-one", "int-one"]),
        (1.0, ["float-one", "int-one"]),
        ("1", ["text-one"]),
        (True, ["true"]),
        (False, ["false"]),
        (0, ["zero"]),
        (None, ["null"]),
    ],
    ids=["int", "float", "text", "true", "false", "zero", "null"],
)
@pytest.mark.usefixtures("typed_metadata_threads")
def test_list_threads_compares_metadata_values_by_json_type(
    value: Any, expected: list[str]
) -> None:
    # when
    page = selectors.list_threads(metadata={"v": value})

    # then
    assert sorted(thread_ids_of(page)) == expected


def test_list_threads_needs_every_metadata_key_of_the_filter_to_match() -> None:
    # given
    services.create_thread(AGENT, {"user": "u-1", "topic": "support"}, thread_id="both")
    services.create_thread(AGENT, {"user": "u-1", "topic": "sales"}, thread_id="user-only")
    services.create_thread(AGENT, {"user": "u-2", "topic": "support"}, thread_id="topic-only")

    # when
    page = selectors.list_threads(metadata={"user": "u-1", "topic": "support"})

    # then
    assert thread_ids_of(page) == ["both"]


@pytest.fixture
def threads_an_hour_apart() -> None:
    for name, offset in (("early", 0), ("middle", 1), ("late", 2)):
        services.create_thread(AGENT, thread_id=name)
        set_updated_at(name, MOMENT + offset * HOUR)


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"updated_after": MOMENT + HOUR}, ["late"]),
        ({"updated_before": MOMENT + HOUR}, ["early"]),
        ({"updated_after": MOMENT, "updated_before": MOMENT + 2 * HOUR}, ["middle"]),
        ({"updated_after": MOMENT - HOUR}, ["late", "middle", "early"]),
    ],
    ids=["after", "before", "between", "after-all"],
)
@pytest.mark.usefixtures("threads_an_hour_apart")
def test_list_threads_bounds_updated_at_strictly(
    bounds: dict[str, Any], expected: list[str]
) -> None:
    # when
    page = selectors.list_threads(**bounds)

    # then
    assert thread_ids_of(page) == expected


# --- get_entries -----------------------------------------------------------------------


@pytest.fixture
def conversation() -> dict[str, str]:
    """A thread of a question, an answer with a tool call, its result, a label event and
    a retry on another branch, a minute apart."""
    thread = services.create_thread(AGENT, thread_id="conversation")
    minute = timedelta(minutes=1)
    question = say(thread.id, "Where is Rome?", created_at=MOMENT)
    call = services.add_entry(
        thread.id,
        role="assistant",
        content="Looking it up",
        tool_calls=[{"id": "call-1", "name": "lookup", "arguments": "{}"}],
        created_at=MOMENT + minute,
    )
    result = services.add_entry(
        thread.id,
        type=EntryType.TOOL_RESULT,
        content="Italy",
        tool_call_id="call-1",
        tool_results=[{"callId": "call-1", "result": "Italy"}],
        created_at=MOMENT + 2 * minute,
    )
    label = services.add_entry(
        thread.id, type=EntryType.LABEL, event={"label": "found"}, created_at=MOMENT + 3 * minute
    )
    retry = say(
        thread.id,
        "In Italy",
        role="assistant",
        parent_id=question.id,
        activate=False,
        created_at=MOMENT + 4 * minute,
    )
    return {
        "thread": thread.id,
        "question": question.id,
        "call": call.id,
        "result": result.id,
        "label": label.id,
        "retry": retry.id,
    }


def test_get_entries_reads_every_branch_and_only_messages_and_tool_results_by_default(
    conversation: dict[str, str],
) -> None:
    # when
    entries = selectors.get_entries(conversation["thread"])

    # then
    c = conversation
    assert ids_of(entries) == [c["question"], c["call"], c["result"], c["retry"]]


def test_get_entries_with_types_all_includes_events(conversation: dict[str, str]) -> None:
    # when
    entries = selectors.get_entries(conversation["thread"], types="all")

    # then
    c = conversation
    assert ids_of(entries) == [c["question"], c["call"], c["result"], c["label"], c["retry"]]


def test_get_entries_with_a_list_of_types_returns_only_those(
    conversation: dict[str, str],
) -> None:
    # when
    labels = selectors.get_entries(conversation["thread"], types=["label"])
    results = selectors.get_entries(conversation["thread"], types=[EntryType.TOOL_RESULT])

    # then
    assert ids_of(labels) == [conversation["label"]]
    assert ids_of(results) == [conversation["result"]]


def test_get_entries_with_a_limit_returns_the_newest_oldest_first(
    conversation: dict[str, str],
) -> None:
    # when
    newest = selectors.get_entries(conversation["thread"], limit=2)
    everything = selectors.get_entries(conversation["thread"], limit=0)

    # then
    c = conversation
    assert ids_of(newest) == [c["result"], c["retry"]]
    assert ids_of(everything) == [c["question"], c["call"], c["result"], c["retry"]]


def test_get_entries_bounds_created_at_strictly_with_before_and_after(
    conversation: dict[str, str],
) -> None:
    # given
    minute = timedelta(minutes=1)

    # when
    before = selectors.get_entries(conversation["thread"], before=MOMENT + 2 * minute)
    after = selectors.get_entries(conversation["thread"], after=MOMENT + 2 * minute)
    between = selectors.get_entries(
        conversation["thread"], after=MOMENT, before=MOMENT + 2 * minute
    )

    # then
    c = conversation
    assert ids_of(before) == [c["question"], c["call"]]
    assert ids_of(after) == [c["retry"]]
    assert ids_of(between) == [c["call"]]


def test_get_entries_orders_by_created_at_before_insertion(conversation: dict[str, str]) -> None:
    # given
    earliest = say(conversation["thread"], "Written last, said first", created_at=MOMENT - HOUR)

    # when
    entries = selectors.get_entries(conversation["thread"])

    # then
    assert ids_of(entries)[0] == earliest.id


def test_get_entries_leaves_out_tool_calls_and_results_unless_asked(
    conversation: dict[str, str],
) -> None:
    # when
    plain = {e.id: e.as_dict() for e in selectors.get_entries(conversation["thread"])}
    full = {
        e.id: e.as_dict()
        for e in selectors.get_entries(conversation["thread"], include_tool_calls=True)
    }

    # then
    call, result = conversation["call"], conversation["result"]
    assert "tool_calls" not in plain[call]
    assert "tool_results" not in plain[result]
    assert full[call]["tool_calls"] == [{"id": "call-1", "name": "lookup", "arguments": "{}"}]
    assert full[result]["tool_results"] == [{"callId": "call-1", "result": "Italy"}]


def test_an_entry_read_without_its_tool_calls_refuses_to_be_saved(
    conversation: dict[str, str],
) -> None:
    # given
    call = next(
        e for e in selectors.get_entries(conversation["thread"]) if e.id == conversation["call"]
    )

    # when
    with pytest.raises(PartialEntryNotSaveable) as caught:
        call.save()

    # then
    assert str(caught.value) == (
        f"Entry {call.id!r} was read without its tool calls; saving it would erase them. "
        "Read it with include_tool_calls=True to change it."
    )
    assert stored_entry(call.id).tool_calls == [
        {"id": "call-1", "name": "lookup", "arguments": "{}"}
    ]


def test_get_entries_of_a_missing_thread_fails() -> None:
    # when
    with pytest.raises(ThreadNotFound) as caught:
        selectors.get_entries("missing-thread")

    # then
    assert str(caught.value) == "Thread not found: 'missing-thread'"


# --- delete_entry: splice --------------------------------------------------------------


@pytest.fixture
def branching() -> dict[str, str]:
    """root -> middle -> leaf (active), and middle -> side on a second branch."""
    thread = services.create_thread(AGENT)
    root = say(thread.id, "root")
    middle = say(thread.id, "middle")
    leaf = say(thread.id, "leaf")
    side = say(thread.id, "side", parent_id=middle.id, activate=False)
    return {
        "thread": thread.id,
        "root": root.id,
        "middle": middle.id,
        "leaf": leaf.id,
        "side": side.id,
    }


def test_delete_entry_moves_its_children_to_its_parent(branching: dict[str, str]) -> None:
    # when
    services.delete_entry(branching["middle"])

    # then
    b = branching
    assert selectors.get_entry(b["middle"]) is None
    assert stored_entry(b["leaf"]).parent_id == b["root"]
    assert stored_entry(b["side"]).parent_id == b["root"]
    assert ids_of(selectors.get_path(b["thread"])) == [b["root"], b["leaf"]]


def test_delete_entry_keeps_the_seq_of_the_others(branching: dict[str, str]) -> None:
    # when
    services.delete_entry(branching["middle"])

    # then
    seqs = dict(Entry.objects.values_list("id", "seq"))
    b = branching
    assert seqs == {b["root"]: 1, b["leaf"]: 3, b["side"]: 4}


def test_delete_entry_of_the_active_leaf_moves_the_leaf_to_its_parent(
    branching: dict[str, str],
) -> None:
    # when
    services.delete_entry(branching["leaf"])

    # then
    b = branching
    assert stored_thread(b["thread"]).active_leaf_id == b["middle"]
    assert ids_of(selectors.get_path(b["thread"])) == [b["root"], b["middle"]]


def test_delete_entry_of_a_root_makes_its_children_roots(branching: dict[str, str]) -> None:
    # when
    services.delete_entry(branching["root"])

    # then
    b = branching
    assert stored_entry(b["middle"]).parent_id is None
    assert ids_of(selectors.get_path(b["thread"])) == [b["middle"], b["leaf"]]


def test_delete_entry_of_a_missing_entry_fails() -> None:
    # when
    with pytest.raises(EntryNotFound) as caught:
        services.delete_entry("missing-entry")

    # then
    assert str(caught.value) == "Entry not found: 'missing-entry'"


# --- clear_thread and delete_thread ----------------------------------------------------


def test_clear_thread_deletes_every_entry_and_keeps_the_thread(
    branching: dict[str, str],
) -> None:
    # given
    other = services.create_thread(AGENT)
    kept = say(other.id, "untouched")
    services.update_thread(branching["thread"], {"topic": "support"})

    # when
    services.clear_thread(branching["thread"])

    # then
    cleared = stored_thread(branching["thread"])
    assert cleared.metadata == {"topic": "support"}
    assert cleared.active_leaf_id is None
    assert selectors.get_entries(branching["thread"], types="all") == []
    assert ids_of(selectors.get_entries(other.id)) == [kept.id]


def test_add_entry_after_clear_thread_starts_a_new_root(branching: dict[str, str]) -> None:
    # given
    services.clear_thread(branching["thread"])

    # when
    entry = say(branching["thread"], "Fresh start")

    # then
    assert entry.parent_id is None
    assert ids_of(selectors.get_path(branching["thread"])) == [entry.id]


def test_delete_thread_deletes_the_thread_and_its_entries_only(
    branching: dict[str, str],
) -> None:
    # given
    other = services.create_thread(AGENT)
    kept = say(other.id, "untouched")

    # when
    services.delete_thread(branching["thread"])

    # then
    assert selectors.get_thread(branching["thread"]) is None
    assert not Entry.objects.filter(thread_id=branching["thread"]).exists()
    assert ids_of(selectors.get_entries(other.id)) == [kept.id]


@pytest.mark.parametrize(
    "operation",
    [services.delete_thread, services.clear_thread],
    ids=["delete_thread", "clear_thread"],
)
def test_deleting_or_clearing_a_missing_thread_fails(operation: Callable[[str], object]) -> None:
    # when
    with pytest.raises(ThreadNotFound) as caught:
        operation("missing-thread")

    # then
    assert str(caught.value) == "Thread not found: 'missing-thread'"
