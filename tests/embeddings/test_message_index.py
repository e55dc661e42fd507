"""The message index: each new message embedded once through the entry signals, vectors
scoped to the thread, deleted with their entries; the re-index service.

Tasks run eagerly (CELERY_TASK_ALWAYS_EAGER in tests/settings.py), inside the on-commit
callbacks that ``django_capture_on_commit_callbacks(execute=True)`` runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any
from unittest import mock

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from cogitator_memory.conf import memory_settings
from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.message_index import (
    MAX_TEXT_CHARS,
    MessageIndexOff,
    ReindexProgress,
)
from cogitator_memory.embeddings.models import PendingVector
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import NewEmbedding, StoredEmbedding
from cogitator_memory.exceptions import EmbeddingServiceError, InvalidInput, ThreadNotFound
from cogitator_memory.jobs import RunStatus
from cogitator_memory.tasks.embeddings import embed_entries_task
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread
from tests.embeddings.fakes import HASH_EMBEDDINGS, HashEmbeddings, hash_vector
from tests.factories import EntryFactory, ThreadFactory

pytestmark = pytest.mark.django_db

Committed = Callable[..., AbstractContextManager[Any]]


@pytest.fixture(autouse=True)
def hash_embeddings() -> Iterator[type[HashEmbeddings]]:
    HashEmbeddings.reset()
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}):
        yield HashEmbeddings
    HashEmbeddings.reset()


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[[], Any]:
    """A block whose on-commit work (signals, hence eager tasks) runs as it ends."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def thread() -> Thread:
    return services.create_thread("agent-1", {"userId": "ana"}, thread_id="trip")


def vectors_of(*entry_ids: str) -> list[StoredEmbedding]:
    return get_embedding_store().get_by_sources(list(entry_ids))


def add_message(committed: Callable[[], Any], thread_id: str, content: Any, **fields: Any) -> Entry:
    with committed():
        fields.setdefault("role", "user")
        return services.add_entry(thread_id, content=content, **fields)


def store_vector(entry_id: str, *, index: str = "messages") -> None:
    get_embedding_store().add(
        [
            NewEmbedding(
                source_type="message",
                source_id=entry_id,
                vector=hash_vector("old"),
                content="old text",
                metadata={"index": index},
            )
        ]
    )


# --- what a new entry gets ---------------------------------------------------------------


def test_adding_a_message_stores_one_vector_with_the_thread_scope(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # when
    entry = add_message(committed, thread.id, "We stayed in Lisbon last April.")
    # then
    [vector] = vectors_of(entry.id)
    assert (vector.source_type, vector.source_id) == ("message", entry.id)
    assert vector.metadata == {
        "index": "messages",
        "agentId": "agent-1",
        "threadId": "trip",
        "userId": "ana",
    }
    assert vector.content == "We stayed in Lisbon last April."
    assert vector.vector == pytest.approx(hash_vector("We stayed in Lisbon last April."))


def test_a_new_message_is_sent_to_the_provider_once(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # when
    add_message(committed, thread.id, "Book the hotel.")
    # then
    assert hash_embeddings.calls == [["Book the hotel."]]


def test_a_thread_without_a_user_gives_vectors_without_user_id(
    committed: Callable[[], Any],
) -> None:
    # given
    services.create_thread("agent-2", thread_id="anonymous")
    # when
    entry = add_message(committed, "anonymous", "Hello")
    # then
    [vector] = vectors_of(entry.id)
    assert vector.metadata == {"index": "messages", "agentId": "agent-2", "threadId": "anonymous"}


def test_a_tool_result_is_indexed_by_its_content(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # when
    entry = add_message(
        committed, thread.id, "22 degrees and sunny", type="tool_result", tool_call_id="call-1"
    )
    # then
    assert [vector.content for vector in vectors_of(entry.id)] == ["22 degrees and sunny"]


def test_a_tool_result_without_content_is_indexed_by_its_tool_results(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # when
    entry = add_message(
        committed,
        thread.id,
        None,
        type="tool_result",
        tool_results=[
            {"callId": "c1", "name": "weather", "result": "Rain in Porto"},
            {"callId": "c2", "name": "rooms", "result": {"free": 3}},
        ],
    )
    # then
    assert [vector.content for vector in vectors_of(entry.id)] == ['Rain in Porto\n{"free": 3}']


def test_the_text_parts_of_a_message_are_indexed_and_its_images_are_not(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # when
    entry = add_message(
        committed,
        thread.id,
        [
            {"type": "text", "text": "This is the view"},
            {"type": "image_url", "image_url": {"url": "https://example.com/view.png"}},
            {"type": "output_text", "text": "from our room"},
        ],
    )
    # then
    assert [vector.content for vector in vectors_of(entry.id)] == [
        "This is the view\nfrom our room"
    ]


def test_a_session_event_is_not_indexed(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # when
    with committed():
        entry = services.add_entry(thread.id, type="label", event={"label": "booked"})
    # then
    assert vectors_of(entry.id) == []
    assert hash_embeddings.calls == []


def test_a_message_with_only_tool_calls_is_not_indexed(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # when
    entry = add_message(
        committed,
        thread.id,
        None,
        role="assistant",
        tool_calls=[{"id": "c1", "name": "weather", "arguments": {"city": "Porto"}}],
    )
    # then
    assert vectors_of(entry.id) == []
    assert hash_embeddings.calls == []


def test_a_long_message_is_embedded_by_its_first_max_text_chars_characters(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # when
    entry = add_message(committed, thread.id, "a" * MAX_TEXT_CHARS + "b" * 10)
    # then
    assert hash_embeddings.calls == [["a" * MAX_TEXT_CHARS]]
    assert vectors_of(entry.id)[0].content == "a" * MAX_TEXT_CHARS


def test_forked_entries_get_vectors_of_the_new_thread(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # given
    first = add_message(committed, thread.id, "Lisbon or Porto?")
    # when
    with committed():
        fork = services.fork_thread(thread.id, first.id, new_thread_id="trip-fork")
    # then
    [copy] = Entry.objects.filter(thread=fork)
    [vector] = vectors_of(copy.id)
    assert vector.metadata["threadId"] == "trip-fork"
    assert vector.content == "Lisbon or Porto?"


def test_without_a_provider_new_messages_are_not_indexed(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"STORE": "exact"}}):
        assert message_index.message_index_enabled() is False
        # when
        entry = add_message(committed, thread.id, "Nobody embeds this")
        # then
        assert vectors_of(entry.id) == []
    assert hash_embeddings.calls == []


def test_an_entry_rolled_back_is_not_indexed(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given
    class Abort(Exception):
        pass

    # when
    with committed(), pytest.raises(Abort), transaction.atomic():
        services.add_entry(thread.id, role="user", content="Never written")
        raise Abort
    # then
    assert hash_embeddings.calls == []


# --- deletions -----------------------------------------------------------------------------


def test_deleting_an_entry_deletes_its_vectors_of_every_index(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # given
    entry = add_message(committed, thread.id, "Delete me")
    store_vector(entry.id, index="items")
    assert len(vectors_of(entry.id)) == 2
    # when
    with committed():
        services.delete_entry(entry.id)
    # then
    assert vectors_of(entry.id) == []


def test_redacting_an_entry_deletes_its_vectors(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given
    entry = add_message(committed, thread.id, "My card is 4111 1111")
    # when
    with committed():
        services.redact_entry(entry.id, reason="card number")
    # then
    assert vectors_of(entry.id) == []
    assert hash_embeddings.calls == [["My card is 4111 1111"]]


def test_clearing_a_thread_deletes_the_vectors_of_its_entries_only(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # given
    cleared = [add_message(committed, thread.id, text) for text in ("one", "two")]
    services.create_thread("agent-1", thread_id="other")
    kept = add_message(committed, "other", "three")
    # when
    with committed():
        services.clear_thread(thread.id)
    # then
    assert vectors_of(*(entry.id for entry in cleared)) == []
    assert [vector.source_id for vector in vectors_of(kept.id)] == [kept.id]


def test_deleting_a_thread_deletes_the_vectors_of_its_entries(
    thread: Thread, committed: Callable[[], Any]
) -> None:
    # given
    entries = [add_message(committed, thread.id, text) for text in ("one", "two")]
    # when
    with committed():
        services.delete_thread(thread.id)
    # then
    assert vectors_of(*(entry.id for entry in entries)) == []


# --- the tasks -----------------------------------------------------------------------------


@pytest.fixture
def through_a_broker() -> Iterator[list[dict[str, Any]]]:
    """Tasks sent as to a worker (recorded here, not run), so that a failed try waits in
    the queue as it does in production: what each send was given."""
    conf = embed_entries_task.app.conf
    conf.task_always_eager = False
    sent: list[dict[str, Any]] = []
    with mock.patch.object(
        embed_entries_task, "apply_async", side_effect=lambda **kwargs: sent.append(kwargs)
    ):
        try:
            yield sent
        finally:
            conf.task_always_eager = True


def test_the_embed_task_puts_a_batch_back_when_the_provider_fails(
    hash_embeddings: type[HashEmbeddings],
    through_a_broker: list[Any],
    django_capture_on_commit_callbacks: Any,
) -> None:
    # given an entry waiting for its vector, and a provider failing once
    entry = EntryFactory(content="Try again")
    PendingVector.objects.create(entry=entry)
    hash_embeddings.fail_on(1)
    # when its task runs
    with django_capture_on_commit_callbacks(execute=True):
        assert embed_entries_task.apply(args=[[entry.id]]).get() == 0
    # then the entry waits again, for later, with the error, and a task is sent for then
    pending = PendingVector.objects.get(pk=entry.id)
    assert (pending.status, pending.attempts) == (RunStatus.QUEUED, 1)
    assert pending.run_after > timezone.now()
    assert pending.error.startswith("embedding_service_failed: The embedding service failed")
    assert through_a_broker and through_a_broker[-1]["args"] == ([entry.id],)
    assert vectors_of(entry.id) == []
    # when the next try comes
    PendingVector.objects.filter(pk=entry.id).update(run_after=timezone.now())
    assert embed_entries_task.apply(args=[[entry.id]]).get() == 1
    # then it is embedded and waits no more
    assert hash_embeddings.calls == [["Try again"], ["Try again"]]
    assert len(vectors_of(entry.id)) == 1
    assert not PendingVector.objects.filter(pk=entry.id).exists()


def test_the_embed_task_gives_up_after_the_last_attempt(
    hash_embeddings: type[HashEmbeddings], through_a_broker: list[Any]
) -> None:
    # given
    entry = EntryFactory(content="Never embedded")
    PendingVector.objects.create(entry=entry)
    attempts = int(memory_settings.JOBS["MAX_ATTEMPTS"])
    for call in range(1, attempts + 2):
        hash_embeddings.fail_on(call)
    # when every try fails
    for _ in range(attempts + 1):
        PendingVector.objects.filter(pk=entry.id).update(run_after=timezone.now())
        embed_entries_task.apply(args=[[entry.id]]).get()
    # then it is dead after its attempts, not tried again, and has no vector
    pending = PendingVector.objects.get(pk=entry.id)
    assert (pending.status, pending.attempts) == (RunStatus.DEAD, attempts)
    assert pending.error.startswith(f"Given up after {attempts} attempts.")
    assert len(hash_embeddings.calls) == attempts
    assert vectors_of(entry.id) == []


def test_a_provider_that_fails_leaves_the_entry_written_and_waiting(
    thread: Thread,
    committed: Callable[[], Any],
    hash_embeddings: type[HashEmbeddings],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given
    hash_embeddings.fail_on(1)
    # when
    with caplog.at_level(logging.WARNING, logger="cogitator_memory"):
        entry = add_message(committed, thread.id, "Not embedded now")
    # then the entry is written, has no vector, and its pending vector says why
    assert Entry.objects.filter(pk=entry.id).exists()
    assert vectors_of(entry.id) == []
    pending = PendingVector.objects.get(pk=entry.id)
    assert pending.status == RunStatus.FAILED
    assert pending.error.startswith("embedding_service_failed:")
    assert any("Embedding 1 entries failed" in r.getMessage() for r in caplog.records)


def test_the_embed_task_embeds_nothing_for_entries_that_are_gone(
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # when
    embedded = embed_entries_task.delay(["entry_gone"]).get()
    # then
    assert embedded == 0
    assert hash_embeddings.calls == []


def test_the_embed_task_run_twice_embeds_once_and_keeps_one_vector(
    thread: Thread, committed: Callable[[], Any], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given: the task ran once through the signal
    entry = add_message(committed, thread.id, "Delivered twice")
    # when
    embedded = embed_entries_task.delay([entry.id]).get()
    # then
    assert embedded == 0
    assert hash_embeddings.calls == [["Delivered twice"]]
    assert len(vectors_of(entry.id)) == 1


# --- index_entries and unindex_entries -----------------------------------------------------


def test_indexing_an_entry_again_replaces_its_vector() -> None:
    # given
    entry = EntryFactory(content="Again")
    store_vector(entry.id)
    # when
    embedded = message_index.index_entries([entry.id])
    # then
    assert embedded == 1
    [vector] = vectors_of(entry.id)
    assert vector.content == "Again"
    assert vector.vector == pytest.approx(hash_vector("Again"))


def test_index_entries_sends_all_its_texts_in_one_request(
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    thread = ThreadFactory()
    entries = [EntryFactory(thread=thread, content=f"text {n}") for n in range(3)]
    # when
    message_index.index_entries([entry.id for entry in entries])
    # then
    assert len(hash_embeddings.calls) == 1
    assert sorted(hash_embeddings.calls[0]) == ["text 0", "text 1", "text 2"]


def test_index_entries_skips_ids_of_entries_that_are_gone(
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    entry = EntryFactory(content="Still here")
    # when
    embedded = message_index.index_entries(["entry_gone", entry.id])
    # then
    assert embedded == 1
    assert hash_embeddings.calls == [["Still here"]]


def test_index_entries_drops_the_message_vector_of_a_redacted_entry() -> None:
    # given: redacted while the index was off, so its vector stayed
    entry = EntryFactory(content="[redacted]", redaction={"at": "2026-01-01T00:00:00+00:00"})
    store_vector(entry.id)
    # when
    embedded = message_index.index_entries([entry.id])
    # then
    assert embedded == 0
    assert vectors_of(entry.id) == []


def test_an_entry_redacted_while_its_text_is_embedded_gets_no_vector(
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    entry = EntryFactory(content="My passport number is X123")
    hash_embeddings.during_embed = lambda: services.redact_entry(entry.id)
    # when
    embedded = message_index.index_entries([entry.id])
    # then
    assert embedded == 0
    assert vectors_of(entry.id) == []


def test_index_entries_keeps_the_vectors_other_indexes_have_of_an_event() -> None:
    # given
    entry = EntryFactory(type="custom", role=None, content=None, event={"kind": "note"})
    store_vector(entry.id, index="messages")
    store_vector(entry.id, index="items")
    # when
    message_index.index_entries([entry.id])
    # then
    assert [vector.metadata["index"] for vector in vectors_of(entry.id)] == ["items"]


def test_index_entries_with_only_missing_embeds_only_entries_without_a_vector(
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    thread = ThreadFactory()
    indexed = EntryFactory(thread=thread, content="indexed")
    store_vector(indexed.id)
    missing = EntryFactory(thread=thread, content="missing")
    # when
    embedded = message_index.index_entries([indexed.id, missing.id], only_missing=True)
    # then
    assert embedded == 1
    assert hash_embeddings.calls == [["missing"]]
    assert vectors_of(indexed.id)[0].content == "old text"


def test_index_entries_stores_nothing_when_the_provider_fails() -> None:
    # given
    entry = EntryFactory(content="Unlucky")
    HashEmbeddings.fail_on(1)
    # when
    with pytest.raises(EmbeddingServiceError, match=r"^hash embeddings failed \(HTTP 503\)"):
        message_index.index_entries([entry.id])
    # then
    assert vectors_of(entry.id) == []


def test_index_entries_does_nothing_when_the_index_is_off(
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    entry = EntryFactory(content="Off")
    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"STORE": "exact"}}):
        embedded = message_index.index_entries([entry.id])
    # then
    assert embedded == 0
    assert hash_embeddings.calls == []


def test_unindex_entries_deletes_their_vectors_and_counts_them() -> None:
    # given
    entry = EntryFactory()
    store_vector(entry.id, index="messages")
    store_vector(entry.id, index="items")
    # when
    deleted = message_index.unindex_entries([entry.id, "entry_gone"])
    # then
    assert deleted == 2
    assert vectors_of(entry.id) == []


# --- reindex -------------------------------------------------------------------------------


@pytest.fixture
def two_agents() -> dict[str, list[Entry]]:
    """Entries written without signals (so without vectors): two threads of agent-1,
    one of agent-2."""
    entries: dict[str, list[Entry]] = {}
    for thread_id, agent_id in (("t1", "agent-1"), ("t2", "agent-1"), ("t3", "agent-2")):
        thread = ThreadFactory(id=thread_id, agent_id=agent_id)
        entries[thread_id] = [
            EntryFactory(thread=thread, content=f"{thread_id} says {n}") for n in range(2)
        ]
    return entries


def indexed_threads() -> list[str]:
    return sorted({vector.metadata["threadId"] for vector in vectors_of(*all_entry_ids())})


def all_entry_ids() -> list[str]:
    return list(Entry.objects.values_list("pk", flat=True))


def test_reindex_of_a_thread_embeds_only_that_thread(two_agents: dict[str, list[Entry]]) -> None:
    # when
    result = message_index.reindex(thread_id="t1")
    # then
    assert (result.done, result.embedded) == (2, 2)
    assert indexed_threads() == ["t1"]


def test_reindex_of_an_agent_embeds_the_threads_of_that_agent(
    two_agents: dict[str, list[Entry]],
) -> None:
    # when
    message_index.reindex(agent_id="agent-1")
    # then
    assert indexed_threads() == ["t1", "t2"]


def test_reindex_of_all_threads_embeds_every_thread(two_agents: dict[str, list[Entry]]) -> None:
    # when
    message_index.reindex(all_threads=True)
    # then
    assert indexed_threads() == ["t1", "t2", "t3"]


def test_reindex_reports_progress_before_and_after_each_batch(
    two_agents: dict[str, list[Entry]],
) -> None:
    # given
    reports: list[ReindexProgress] = []
    ids = sorted(all_entry_ids())
    # when
    message_index.reindex(all_threads=True, batch_size=4, progress=reports.append)
    # then
    assert reports == [
        ReindexProgress(total=6, done=0, embedded=0, last_entry_id=None),
        ReindexProgress(total=6, done=4, embedded=4, last_entry_id=ids[3]),
        ReindexProgress(total=6, done=6, embedded=6, last_entry_id=ids[5]),
    ]


def test_reindex_resumes_after_the_entry_given(
    two_agents: dict[str, list[Entry]], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given
    ids = sorted(all_entry_ids())
    # when
    result = message_index.reindex(all_threads=True, resume_from=ids[3])
    # then
    assert result.total == 2
    assert {vector.source_id for vector in vectors_of(*ids)} == set(ids[4:])


def test_reindex_embeds_in_batches_of_batch_size(
    two_agents: dict[str, list[Entry]], hash_embeddings: type[HashEmbeddings]
) -> None:
    # when
    message_index.reindex(all_threads=True, batch_size=4)
    # then
    assert [len(call) for call in hash_embeddings.calls] == [4, 2]


def test_reindex_takes_the_batch_size_from_the_settings(
    two_agents: dict[str, list[Entry]], hash_embeddings: type[HashEmbeddings]
) -> None:
    # given
    settings = {"EMBEDDINGS": {**HASH_EMBEDDINGS, "BATCH_SIZE": 5}}
    # when
    with override_settings(COGITATOR_MEMORY=settings):
        message_index.reindex(all_threads=True)
    # then
    assert [len(call) for call in hash_embeddings.calls] == [5, 1]


def test_reindex_refuses_a_batch_size_below_one() -> None:
    # when
    with pytest.raises(InvalidInput) as raised:
        message_index.reindex(all_threads=True, batch_size=0)
    # then
    assert raised.value.errors == {
        "batch_size": ["batch_size must be a whole number of 1 or more."]
    }


@pytest.mark.parametrize(
    "scope",
    [{}, {"thread_id": "t1", "agent_id": "agent-1"}, {"agent_id": "a", "all_threads": True}],
)
def test_reindex_needs_exactly_one_scope(scope: dict[str, Any]) -> None:
    # when
    with pytest.raises(InvalidInput) as raised:
        message_index.reindex(**scope)
    # then
    assert raised.value.errors == {
        "scope": ["Give exactly one of thread_id, agent_id or all_threads."]
    }


def test_reindex_of_an_unknown_thread_raises_thread_not_found() -> None:
    # when
    with pytest.raises(ThreadNotFound, match=r"^Thread not found: 'nope'$"):
        message_index.reindex(thread_id="nope")


def test_reindex_without_a_provider_raises_message_index_off() -> None:
    # when
    with (
        override_settings(COGITATOR_MEMORY={}),
        pytest.raises(MessageIndexOff) as raised,
    ):
        message_index.reindex(all_threads=True)
    # then
    assert str(raised.value) == (
        "The message index is off: no embedding provider is configured "
        "(set COGITATOR_MEMORY['EMBEDDINGS']['PROVIDER'])."
    )
