"""Change signals: each sent once, with its documented arguments, after commit only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction
from django.dispatch import Signal

from cogitator_memory import signals
from cogitator_memory.threads import selectors, services
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread

pytestmark = pytest.mark.django_db


class Recorder:
    """A receiver that keeps the keyword arguments of every send."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, sender: Any, **kwargs: Any) -> None:
        kwargs.pop("signal")
        self.calls.append({"sender": sender, **kwargs})


Listen = Callable[[Signal], Recorder]


@pytest.fixture
def listen() -> Iterator[Listen]:
    connected: list[tuple[Signal, Recorder]] = []

    def connect(signal: Signal) -> Recorder:
        recorder = Recorder()
        signal.connect(recorder, weak=False)
        connected.append((signal, recorder))
        return recorder

    yield connect
    for signal, recorder in connected:
        signal.disconnect(recorder)


class Abort(Exception):
    """Raised inside a transaction to roll it back."""


@pytest.fixture
def thread() -> Thread:
    return services.create_thread("agent-1", thread_id="signals-thread")


# --- entry_added -----------------------------------------------------------------------


def test_add_entry_sends_entry_added_once_after_commit(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    added = listen(signals.entry_added)
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        entry = services.add_entry(thread.id, role="user", content="Hello")
        # then: nothing is heard before the commit
        assert added.calls == []
    assert len(callbacks) == 1
    assert len(added.calls) == 1
    call = added.calls[0]
    assert call["sender"] is Entry
    assert set(call) == {"sender", "entry"}
    assert call["entry"].id == entry.id
    assert call["entry"].thread_id == thread.id
    assert call["entry"].content == "Hello"


def test_add_entry_sends_nothing_when_the_transaction_rolls_back(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    added = listen(signals.entry_added)
    # when
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Abort, match="roll back"),
        transaction.atomic(),
    ):
        services.add_entry(thread.id, role="user", content="Hello")
        raise Abort("roll back")
    # then
    assert callbacks == []
    assert added.calls == []
    assert selectors.get_entries(thread.id) == []


def test_fork_thread_sends_entry_added_for_each_copy(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="Plan a day in Rome")
    second = services.add_entry(thread.id, role="assistant", content="Start at the Colosseum")
    third = services.add_entry(thread.id, role="user", content="And then?")
    added = listen(signals.entry_added)
    # when
    with django_capture_on_commit_callbacks(execute=True):
        fork = services.fork_thread(thread.id, third.id, "rome-fork")
        assert added.calls == []
    # then
    copies = selectors.get_entries(fork.id)
    assert [call["entry"].id for call in added.calls] == [copy.id for copy in copies]
    assert [call["entry"].metadata["forkOf"] for call in added.calls] == [
        first.id,
        second.id,
        third.id,
    ]
    assert {call["entry"].thread_id for call in added.calls} == {"rome-fork"}
    assert {call["sender"] for call in added.calls} == {Entry}


def test_fork_thread_sends_nothing_when_the_transaction_rolls_back(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="Hello")
    added = listen(signals.entry_added)
    # when
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Abort, match="roll back"),
        transaction.atomic(),
    ):
        services.fork_thread(thread.id, entry.id, "rolled-back-fork")
        raise Abort("roll back")
    # then
    assert callbacks == []
    assert added.calls == []
    assert selectors.get_thread("rolled-back-fork") is None


# --- entry_deleted ---------------------------------------------------------------------


def test_delete_entry_sends_entry_deleted_once_after_commit(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="Hello")
    deleted = listen(signals.entry_deleted)
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.delete_entry(entry.id)
        # then: nothing is heard before the commit
        assert deleted.calls == []
    assert len(callbacks) == 1
    assert deleted.calls == [{"sender": Entry, "entry_id": entry.id, "thread_id": thread.id}]


def test_delete_entry_sends_nothing_when_the_transaction_rolls_back(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="Hello")
    deleted = listen(signals.entry_deleted)
    # when
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Abort, match="roll back"),
        transaction.atomic(),
    ):
        services.delete_entry(entry.id)
        raise Abort("roll back")
    # then
    assert callbacks == []
    assert deleted.calls == []
    assert selectors.get_entry(entry.id) is not None


# --- entry_redacted --------------------------------------------------------------------


def test_redact_entry_sends_entry_redacted_once_after_commit(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="My passport is X123")
    redacted = listen(signals.entry_redacted)
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.redact_entry(entry.id, reason="the user asked")
        # then: nothing is heard before the commit
        assert redacted.calls == []
    assert len(callbacks) == 1
    assert len(redacted.calls) == 1
    call = redacted.calls[0]
    assert call["sender"] is Entry
    assert set(call) == {"sender", "entry"}
    # The entry as it is after redaction, not as it was.
    assert call["entry"].id == entry.id
    assert call["entry"].content == REDACTED_TEXT
    assert call["entry"].redaction["reason"] == "the user asked"


def test_redact_entry_sends_nothing_when_the_transaction_rolls_back(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="My passport is X123")
    redacted = listen(signals.entry_redacted)
    # when
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Abort, match="roll back"),
        transaction.atomic(),
    ):
        services.redact_entry(entry.id)
        raise Abort("roll back")
    # then
    assert callbacks == []
    assert redacted.calls == []
    stored = selectors.get_entry(entry.id)
    assert stored is not None
    assert stored.content == "My passport is X123"


def test_redacting_a_missing_entry_sends_nothing(
    listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    redacted = listen(signals.entry_redacted)
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        result = services.redact_entry("entry_missing")
    # then
    assert result is None
    assert callbacks == []
    assert redacted.calls == []


# --- thread_cleared --------------------------------------------------------------------


def test_clear_thread_sends_thread_cleared_once_after_commit(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="Hello")
    second = services.add_entry(thread.id, role="assistant", content="Hi")
    other_branch = services.add_entry(
        thread.id, role="assistant", content="Hey", parent_id=first.id, activate=False
    )
    cleared = listen(signals.thread_cleared)
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.clear_thread(thread.id)
        # then: nothing is heard before the commit
        assert cleared.calls == []
    assert len(callbacks) == 1
    assert len(cleared.calls) == 1
    call = cleared.calls[0]
    assert call["sender"] is Thread
    assert set(call) == {"sender", "thread_id", "entry_ids"}
    assert call["thread_id"] == thread.id
    assert sorted(call["entry_ids"]) == sorted([first.id, second.id, other_branch.id])


def test_clear_thread_sends_nothing_when_the_transaction_rolls_back(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    entry = services.add_entry(thread.id, role="user", content="Hello")
    cleared = listen(signals.thread_cleared)
    # when
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Abort, match="roll back"),
        transaction.atomic(),
    ):
        services.clear_thread(thread.id)
        raise Abort("roll back")
    # then
    assert callbacks == []
    assert cleared.calls == []
    assert [e.id for e in selectors.get_entries(thread.id)] == [entry.id]


# --- thread_deleted --------------------------------------------------------------------


def test_delete_thread_sends_thread_deleted_once_after_commit(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="Hello")
    second = services.add_entry(thread.id, role="assistant", content="Hi")
    deleted = listen(signals.thread_deleted)
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.delete_thread(thread.id)
        # then: nothing is heard before the commit
        assert deleted.calls == []
    assert len(callbacks) == 1
    assert len(deleted.calls) == 1
    call = deleted.calls[0]
    assert call["sender"] is Thread
    assert set(call) == {"sender", "thread_id", "entry_ids"}
    assert call["thread_id"] == thread.id
    assert sorted(call["entry_ids"]) == sorted([first.id, second.id])


def test_delete_thread_sends_nothing_when_the_transaction_rolls_back(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    deleted = listen(signals.thread_deleted)
    # when
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(Abort, match="roll back"),
        transaction.atomic(),
    ):
        services.delete_thread(thread.id)
        raise Abort("roll back")
    # then
    assert callbacks == []
    assert deleted.calls == []
    assert selectors.get_thread(thread.id) is not None


def test_deleting_an_empty_thread_sends_an_empty_list_of_entry_ids(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    deleted = listen(signals.thread_deleted)
    # when
    with django_capture_on_commit_callbacks(execute=True):
        services.delete_thread(thread.id)
    # then
    assert deleted.calls == [{"sender": Thread, "thread_id": thread.id, "entry_ids": []}]


# --- writes that are not changes of entries --------------------------------------------


def test_moving_the_active_leaf_sends_no_signal(
    thread: Thread, listen: Listen, django_capture_on_commit_callbacks: Any
) -> None:
    # given
    first = services.add_entry(thread.id, role="user", content="Hello")
    second = services.add_entry(thread.id, role="assistant", content="Hi")
    heard = [
        listen(signal)
        for signal in (
            signals.entry_added,
            signals.entry_deleted,
            signals.entry_redacted,
            signals.thread_cleared,
            signals.thread_deleted,
        )
    ]
    # when
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.rewind(thread.id, first.id)
        services.checkout(thread.id, second.id)
    # then
    assert callbacks == []
    assert [recorder.calls for recorder in heard] == [[], [], [], [], []]
