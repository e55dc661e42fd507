"""Bad input to the thread services and selectors: each gives a clear typed error, and
nothing is written (every row of Thread and Entry, the active leaf and next_seq among
them, is the same before and after)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from cogitator_memory.exceptions import (
    EntryNotFound,
    EntryNotInThread,
    InvalidEntry,
    InvalidInput,
    NotOnActiveBranch,
    RedactionRefused,
    ThreadAlreadyExists,
    ThreadNotFound,
)
from cogitator_memory.threads import selectors, services
from cogitator_memory.threads.models import FORKS_KEY, Entry, EntryType, Thread

pytestmark = pytest.mark.django_db

AGENT = "agent-1"
MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
THREAD_ID_RULE = (
    "A thread id is 1 to 255 characters: letters, digits and _ . : @ -, "
    "starting with a letter or digit."
)


@dataclass(frozen=True)
class Tree:
    """Thread "main": question -> answer (active leaf), question -> retry on a second
    branch, answer -> label (an event, not active); thread "other": one entry."""

    question: str
    answer: str
    retry: str
    label: str
    other_entry: str


@pytest.fixture
def tree() -> Tree:
    services.create_thread(AGENT, {"topic": "rome"}, thread_id="main")
    services.create_thread(AGENT, thread_id="other")
    question = services.add_entry("main", role="user", content="Plan a day in Rome")
    answer = services.add_entry("main", role="assistant", content="Start at the Colosseum")
    retry = services.add_entry(
        "main",
        role="assistant",
        content="Start at the Vatican",
        parent_id=question.id,
        activate=False,
    )
    label = services.add_entry(
        "main", type=EntryType.LABEL, event={"label": "plan"}, activate=False
    )
    other_entry = services.add_entry("other", role="user", content="Elsewhere")
    return Tree(question.id, answer.id, retry.id, label.id, other_entry.id)


def store_state() -> dict[str, Any]:
    """Every row of both tables, so any write shows as a difference."""
    return {
        "thread_count": Thread.objects.count(),
        "entry_count": Entry.objects.count(),
        "threads": list(Thread.objects.order_by("id").values()),
        "entries": list(Entry.objects.order_by("thread_id", "seq").values()),
    }


def leaf_and_seq(thread_id: str) -> tuple[str | None, int]:
    thread = Thread.objects.get(pk=thread_id)
    return thread.active_leaf_id, thread.next_seq


def refused(
    error: type[Exception], call: Callable[[], object]
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Run ``call``, which must raise ``error``; return the error and the store before and
    after."""
    before = store_state()
    with pytest.raises(error) as caught:
        call()
    return caught.value, before, store_state()


# --- add_entry -------------------------------------------------------------------------


def test_add_entry_of_an_unknown_type_is_refused_and_writes_nothing(tree: Tree) -> None:
    # given
    leaf_before = leaf_and_seq("main")

    # when
    error, before, after = refused(
        InvalidEntry, lambda: services.add_entry("main", type="thought", content="Hmm")
    )

    # then
    assert error.errors["type"] == [
        "Unknown entry type 'thought'; expected one of message, tool_result, model_change, "
        "compaction, approval, interrupt, label, custom."
    ]
    assert str(error).startswith("type: Unknown entry type 'thought'")
    assert after == before
    assert leaf_and_seq("main") == leaf_before


def test_add_entry_under_a_parent_of_another_thread_is_refused_and_writes_nothing(
    tree: Tree,
) -> None:
    # given
    leaf_before = leaf_and_seq("main")

    # when
    error, before, after = refused(
        EntryNotInThread,
        lambda: services.add_entry(
            "main", role="user", content="Hello", parent_id=tree.other_entry
        ),
    )

    # then
    message = f"Entry {tree.other_entry!r} is not an entry of thread 'main'."
    assert error.field == "parent_id"
    assert error.errors == {"parent_id": [message]}
    assert str(error) == f"parent_id: {message}"
    assert after == before
    assert leaf_and_seq("main") == leaf_before


def test_add_entry_under_a_missing_parent_is_refused_and_writes_nothing(tree: Tree) -> None:
    # when
    error, before, after = refused(
        EntryNotInThread,
        lambda: services.add_entry("main", role="user", content="Hi", parent_id="no-such-entry"),
    )

    # then
    assert error.errors == {
        "parent_id": ["Entry 'no-such-entry' is not an entry of thread 'main'."]
    }
    assert after == before


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"role": "user", "content": {1, 2}},
            "content",
            "Content must be a text or a list of content parts.",
        ),
        (
            {"role": "user", "content": [{"type": "text", "sent": datetime(2025, 1, 1)}]},
            "content",
            "Must be JSON data",
        ),
        (
            {"role": "user", "content": [{"type": "score", "value": float("nan")}]},
            "content",
            "Must be JSON data",
        ),
        (
            {"type": EntryType.CUSTOM, "event": {"at": MOMENT}},
            "event",
            "Must be JSON data",
        ),
        (
            {"role": "user", "content": "Hi", "metadata": {"tags": {"a", "b"}}},
            "metadata",
            "Must be JSON data",
        ),
    ],
    ids=["set-content", "datetime-in-content", "nan-in-content", "datetime-event", "set-metadata"],
)
def test_add_entry_with_data_that_is_not_json_is_refused_and_writes_nothing(
    tree: Tree, fields: dict[str, Any], field: str, message: str
) -> None:
    # when
    error, before, after = refused(InvalidEntry, lambda: services.add_entry("main", **fields))

    # then
    assert list(error.errors) == [field]
    assert error.errors[field][0].startswith(message)
    assert after == before


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"role": "user", "content": "Hi", "token_count": -1},
            "token_count",
            "A token count is a whole number from 0 to 2147483647.",
        ),
        (
            {"role": "user", "content": "Hi", "token_count": 2.5},
            "token_count",
            "A token count is a whole number from 0 to 2147483647.",
        ),
        (
            {"role": "user", "content": "Hi", "created_at": datetime(2025, 3, 1, 12, 0)},
            "created_at",
            "created_at must be a datetime with a time zone.",
        ),
        (
            {"role": "user", "content": "Hi", "created_at": "2025-03-01T12:00:00Z"},
            "created_at",
            "created_at must be a datetime with a time zone.",
        ),
        ({"content": "Hi"}, "role", "A message needs a role."),
        (
            {"role": "robot", "content": "Hi"},
            "role",
            "Unknown role 'robot'; expected one of system, user, assistant, tool.",
        ),
        ({"role": "user"}, "content", "A message needs content or tool calls."),
        (
            {"type": EntryType.LABEL},
            "event",
            "A label entry is a session event and needs an event object.",
        ),
        (
            {"type": EntryType.COMPACTION, "event": "summary"},
            "event",
            "A compaction entry is a session event and needs an event object.",
        ),
        (
            {"role": "user", "content": "Hi", "event": {"label": "x"}},
            "event",
            "Only session events carry an event payload, not message entries.",
        ),
        (
            {"role": "user", "content": "Hi", "metadata": ["a"]},
            "metadata",
            "Metadata must be an object.",
        ),
        (
            {"role": "assistant", "tool_calls": [{"name": "lookup"}]},
            "tool_calls",
            "Tool call 0 needs a non-empty text 'id'.",
        ),
    ],
    ids=[
        "negative-token-count",
        "fractional-token-count",
        "naive-created-at",
        "text-created-at",
        "message-without-role",
        "unknown-role",
        "message-without-content",
        "event-without-payload",
        "event-payload-not-an-object",
        "message-with-event-payload",
        "list-metadata",
        "tool-call-without-id",
    ],
)
def test_add_entry_with_a_bad_field_is_refused_naming_the_field_and_writes_nothing(
    tree: Tree, fields: dict[str, Any], field: str, message: str
) -> None:
    # when
    error, before, after = refused(InvalidEntry, lambda: services.add_entry("main", **fields))

    # then
    assert error.errors == {field: [message]}
    assert after == before


def test_add_entry_reports_every_bad_field_at_once(tree: Tree) -> None:
    # when
    error, before, after = refused(
        InvalidEntry,
        lambda: services.add_entry(
            "main", content="Hi", token_count=-1, created_at=datetime(2025, 3, 1)
        ),
    )

    # then
    assert set(error.errors) == {"role", "token_count", "created_at"}
    assert after == before


# --- rewind, checkout, fork ------------------------------------------------------------


def test_rewind_to_an_entry_of_another_thread_is_refused_and_moves_nothing(tree: Tree) -> None:
    # given
    leaf_before = leaf_and_seq("main")

    # when
    error, before, after = refused(
        EntryNotInThread, lambda: services.rewind("main", tree.other_entry)
    )

    # then
    message = f"Entry {tree.other_entry!r} is not an entry of thread 'main'."
    assert error.field == "to_entry_id"
    assert error.errors == {"to_entry_id": [message]}
    assert after == before
    assert leaf_and_seq("main") == leaf_before


def test_rewind_to_an_entry_on_another_branch_is_refused_and_moves_nothing(tree: Tree) -> None:
    # given
    leaf_before = leaf_and_seq("main")

    # when
    error, before, after = refused(NotOnActiveBranch, lambda: services.rewind("main", tree.retry))

    # then
    assert str(error) == (
        f"Entry {tree.retry!r} is not on the active branch of thread 'main'; "
        "rewind goes back along the active branch, checkout switches branches."
    )
    assert (error.entry_id, error.thread_id) == (tree.retry, "main")
    assert after == before
    assert leaf_and_seq("main") == leaf_before


def test_checkout_of_a_missing_entry_is_refused_and_moves_nothing(tree: Tree) -> None:
    # given
    leaf_before = leaf_and_seq("main")

    # when
    error, before, after = refused(
        EntryNotInThread, lambda: services.checkout("main", "no-such-entry")
    )

    # then
    assert error.field == "entry_id"
    assert error.errors == {"entry_id": ["Entry 'no-such-entry' is not an entry of thread 'main'."]}
    assert after == before
    assert leaf_and_seq("main") == leaf_before


def test_fork_at_a_missing_entry_is_refused_and_creates_no_thread(tree: Tree) -> None:
    # when
    error, before, after = refused(
        EntryNotInThread, lambda: services.fork_thread("main", "no-such-entry", "fork-1")
    )

    # then
    assert error.field == "at_entry_id"
    assert error.errors == {
        "at_entry_id": ["Entry 'no-such-entry' is not an entry of thread 'main'."]
    }
    assert after == before
    assert selectors.get_thread("fork-1") is None


def test_fork_at_an_entry_of_another_thread_is_refused_and_creates_no_thread(tree: Tree) -> None:
    # when
    error, before, after = refused(
        EntryNotInThread, lambda: services.fork_thread("main", tree.other_entry)
    )

    # then
    assert error.errors == {
        "at_entry_id": [f"Entry {tree.other_entry!r} is not an entry of thread 'main'."]
    }
    assert after == before


def test_fork_into_an_existing_thread_id_is_refused_and_writes_nothing(tree: Tree) -> None:
    # when
    error, before, after = refused(
        ThreadAlreadyExists, lambda: services.fork_thread("main", tree.answer, "other")
    )

    # then
    assert str(error) == "Thread 'other' already exists."
    assert error.thread_id == "other"
    assert after == before
    assert FORKS_KEY not in Thread.objects.get(pk="main").metadata


def test_fork_into_a_bad_thread_id_is_refused_and_writes_nothing(tree: Tree) -> None:
    # when
    error, before, after = refused(
        InvalidInput, lambda: services.fork_thread("main", tree.answer, "has spaces")
    )

    # then
    assert error.errors == {"new_thread_id": [THREAD_ID_RULE]}
    assert after == before


# --- redact_entry ----------------------------------------------------------------------


def test_redacting_an_event_entry_is_refused_and_leaves_it_unchanged(tree: Tree) -> None:
    # when
    error, before, after = refused(RedactionRefused, lambda: services.redact_entry(tree.label))

    # then
    assert str(error) == f"Entry {tree.label!r} is a label event: events are deleted, not redacted."
    assert (error.entry_id, error.entry_type) == (tree.label, "label")
    assert after == before


# --- threads ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "thread_id",
    ["has spaces", "", "x" * 300, "-leading-dash", "new\nline", 42],
    ids=["spaces", "empty", "300-chars", "leading-dash", "newline", "not-a-text"],
)
def test_create_thread_with_a_bad_id_is_refused_and_writes_nothing(
    tree: Tree, thread_id: Any
) -> None:
    # when
    error, before, after = refused(
        InvalidInput, lambda: services.create_thread(AGENT, thread_id=thread_id)
    )

    # then
    assert error.errors == {"thread_id": [THREAD_ID_RULE]}
    assert str(error) == f"thread_id: {THREAD_ID_RULE}"
    assert after == before


@pytest.mark.parametrize(
    "agent_id", ["", "   ", "a" * 256, None], ids=["empty", "blank", "256", "none"]
)
def test_create_thread_with_a_bad_agent_id_is_refused_and_writes_nothing(
    tree: Tree, agent_id: Any
) -> None:
    # when
    error, before, after = refused(InvalidInput, lambda: services.create_thread(agent_id))

    # then
    assert error.errors == {
        "agent_id": ["An agent id is a non-empty text of at most 255 characters."]
    }
    assert after == before


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (["topic"], "Metadata must be an object, not list."),
        ("topic=rome", "Metadata must be an object, not str."),
        ({1: "one"}, "Metadata keys must be texts."),
    ],
    ids=["list", "text", "number-key"],
)
def test_create_thread_with_metadata_that_is_not_an_object_is_refused(
    tree: Tree, metadata: Any, message: str
) -> None:
    # when
    error, before, after = refused(
        InvalidInput, lambda: services.create_thread(AGENT, metadata, thread_id="new-thread")
    )

    # then
    assert error.errors == {"metadata": [message]}
    assert after == before


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: services.create_thread(AGENT, {"at": MOMENT}), "Must be JSON data"),
        (lambda: services.update_thread("main", {"tags": {"a"}}), "Must be JSON data"),
        (
            lambda: services.update_thread("main", ["topic"]),  # type: ignore[arg-type]
            "Metadata must be an object, not",
        ),
        (lambda: services.update_thread("main", {"score": float("inf")}), "Must be JSON data"),
    ],
    ids=["create-datetime", "update-set", "update-list", "update-infinity"],
)
def test_thread_metadata_that_is_not_json_is_refused_and_writes_nothing(
    tree: Tree, call: Callable[[], object], message: str
) -> None:
    # when
    error, before, after = refused(InvalidInput, call)

    # then
    assert list(error.errors) == ["metadata"]
    assert error.errors["metadata"][0].startswith(message)
    assert after == before


# --- reads -----------------------------------------------------------------------------

LIMIT_RULE = "limit must be a whole number from 1 to 500."


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"limit": 0}, "limit", LIMIT_RULE),
        ({"limit": -1}, "limit", LIMIT_RULE),
        ({"limit": 501}, "limit", LIMIT_RULE),
        ({"limit": "10"}, "limit", LIMIT_RULE),
        ({"limit": True}, "limit", LIMIT_RULE),
        ({"limit": 2.5}, "limit", LIMIT_RULE),
        ({"cursor": "not-a-cursor"}, "cursor", "This cursor was not made by list_threads."),
        ({"cursor": "WyJ4Il0"}, "cursor", "This cursor was not made by list_threads."),
        ({"cursor": 12}, "cursor", "This cursor was not made by list_threads."),
        (
            {"metadata": {"user": {"id": 1}}},
            "metadata",
            "Filter value of 'user' must be a text, number, boolean or null.",
        ),
        (
            {"metadata": {"tags": ["a"]}},
            "metadata",
            "Filter value of 'tags' must be a text, number, boolean or null.",
        ),
        ({"metadata": "user=u-1"}, "metadata", "The metadata filter must be an object."),
        (
            {"updated_after": datetime(2025, 3, 1)},
            "updated_after",
            "updated_after must be a datetime with a time zone.",
        ),
        (
            {"updated_before": "2025-03-01"},
            "updated_before",
            "updated_before must be a datetime with a time zone.",
        ),
    ],
    ids=[
        "limit-zero",
        "limit-negative",
        "limit-over-max",
        "limit-text",
        "limit-bool",
        "limit-fraction",
        "cursor-garbage",
        "cursor-wrong-shape",
        "cursor-not-text",
        "filter-object",
        "filter-list",
        "filter-not-object",
        "naive-updated-after",
        "text-updated-before",
    ],
)
def test_list_threads_with_a_bad_argument_is_refused_naming_it(
    tree: Tree, arguments: dict[str, Any], field: str, message: str
) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        selectors.list_threads(**arguments)

    # then
    assert caught.value.errors == {field: [message]}


def test_list_threads_with_a_bad_metadata_filter_key_is_refused(tree: Tree) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        selectors.list_threads(metadata={"user id'; --": "u-1"})

    # then
    assert list(caught.value.errors) == ["metadata"]
    assert caught.value.errors["metadata"][0].startswith('Filter key "user id\'; --"')


@pytest.mark.parametrize(
    "read",
    [
        lambda: selectors.get_entries("main", types=["message", "thought"]),
        lambda: selectors.get_path("main", types=["thought"]),
        lambda: selectors.get_entries("main", types="thought"),
    ],
    ids=["get_entries", "get_path", "get_entries-single-text"],
)
def test_reading_entries_of_an_unknown_type_is_refused_naming_it(
    tree: Tree, read: Callable[[], object]
) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        read()

    # then
    assert list(caught.value.errors) == ["types"]
    assert caught.value.errors["types"][0].startswith("Unknown entry types: thought;")


@pytest.mark.parametrize(
    "limit", [-1, "5", 1.5, True], ids=["negative", "text", "fraction", "bool"]
)
def test_get_entries_with_a_bad_limit_is_refused(tree: Tree, limit: Any) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        selectors.get_entries("main", limit=limit)

    # then
    assert caught.value.errors == {"limit": ["limit must be a whole number of 0 or more."]}


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda bad: services.update_thread(bad, {"x": 1}), ThreadNotFound),
        (lambda bad: services.delete_thread(bad), ThreadNotFound),
        (lambda bad: services.clear_thread(bad), ThreadNotFound),
        (lambda bad: services.add_entry(bad, role="user", content="x"), ThreadNotFound),
        (lambda bad: services.delete_entry(bad), EntryNotFound),
        (lambda bad: services.rewind(bad, "e"), ThreadNotFound),
    ],
    ids=["update", "delete-thread", "clear", "add-entry", "delete-entry", "rewind"],
)
@pytest.mark.parametrize("bad", ["t\x00", "\ud800"], ids=["nul", "lone-surrogate"])
def test_an_id_no_database_can_hold_is_a_missing_object_not_a_database_error(
    call, error, bad
) -> None:
    with pytest.raises(error):
        call(bad)
    assert services.redact_entry(bad) is None
    assert selectors.get_entry(bad) is None
    assert selectors.get_thread(bad) is None


def test_an_id_or_filter_key_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(InvalidInput) as refused:
        services.create_thread("agent-1", thread_id="abc\n")
    assert list(refused.value.errors) == ["thread_id"]
    with pytest.raises(InvalidInput) as refused:
        selectors.list_threads(metadata={"topic\n": "x"})
    assert list(refused.value.errors) == ["metadata"]
    assert not Thread.objects.exists()
