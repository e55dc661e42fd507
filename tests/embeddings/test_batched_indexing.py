"""The message index embeds in batches: the entries waiting for their tasks go to the
provider in one call and to the store in one write, and a re-index page likewise.

The tasks of new entries are held back here (the trigger's send records the ids) and
then run one after the other, as a worker drains a queue that filled while it was busy.
Each takes a batch of the pending vectors: its own entries first, then those waiting
longest, in any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.test import override_settings
from django.utils import timezone

from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.models import PendingVector
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import EmbeddingFilter, StoredEmbedding
from cogitator_memory.grants import Grants
from cogitator_memory.search.hybrid import semantic_search
from cogitator_memory.tasks.embeddings import embed_entries_task
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.embeddings.fakes import HASH_EMBEDDINGS, HashEmbeddings

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def hash_embeddings() -> Iterator[type[HashEmbeddings]]:
    HashEmbeddings.reset()
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}):
        yield HashEmbeddings
    HashEmbeddings.reset()


@pytest.fixture
def queued(django_capture_on_commit_callbacks: Any) -> Iterator[list[list[str]]]:
    """The entry ids of the tasks the trigger enqueued, not run yet."""
    ids: list[list[str]] = []
    with mock.patch.object(
        embed_entries_task,
        "apply_async",
        side_effect=lambda args, **kwargs: ids.append(list(args[0])),
    ):
        yield ids


@pytest.fixture
def store_writes() -> Iterator[list[int]]:
    """The size of every write to the embedding store."""
    sizes: list[int] = []
    store_type = type(get_embedding_store())
    original = store_type.add

    def counted(self: Any, embeddings: Any) -> list[StoredEmbedding]:
        sizes.append(len(embeddings))
        return original(self, embeddings)

    with mock.patch.object(store_type, "add", counted):
        yield sizes


def add_messages(
    capture: Callable[..., Any], thread_id: str, texts: list[str], **fields: Any
) -> list[Entry]:
    entries = []
    for text in texts:
        with capture(execute=True):
            entries.append(services.add_entry(thread_id, role="user", content=text, **fields))
    return entries


def add_in_turn(capture: Callable[..., Any], turns: list[tuple[str, str]]) -> list[Entry]:
    """Add each (thread id, text) in this order, as users of several threads write."""
    return [add_messages(capture, thread_id, [text])[0] for thread_id, text in turns]


def drain(queued: list[list[str]]) -> list[int]:
    """Run the queued tasks in order; what each embedded."""
    return [embed_entries_task.apply(args=[entry_ids]).get() for entry_ids in queued]


def message_vectors(*entry_ids: str) -> dict[str, StoredEmbedding]:
    return {vector.source_id: vector for vector in get_embedding_store().get_by_sources(entry_ids)}


def texts_per_call(embeddings: type[HashEmbeddings]) -> list[list[str]]:
    """The texts of each provider call, sorted: a batch sends its texts in no set order."""
    return [sorted(call) for call in embeddings.calls]


def scope_of(vector: StoredEmbedding) -> tuple[Any, Any, Any]:
    return (vector.metadata["agentId"], vector.metadata["threadId"], vector.metadata["userId"])


def found_by(agent_id: str, user_id: str) -> list[str]:
    """The texts of the message vectors a search in this user's scope finds."""
    hits = semantic_search(
        "ana 1",
        limit=10,
        filter=EmbeddingFilter(index=message_index.MESSAGES_INDEX),
        grants=Grants.for_agents([agent_id], {agent_id: [user_id]}),
    )
    return sorted(hit.embedding.content for hit in hits)


def test_a_backlog_of_new_entries_is_embedded_in_one_call_and_one_write(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    store_writes: list[int],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", {"userId": "ana"}, thread_id="trip")
    texts = [f"message {n}" for n in range(5)]
    entries = add_messages(django_capture_on_commit_callbacks, "trip", texts)
    assert queued == [[entry.id] for entry in entries]
    # when
    embedded = drain(queued)
    # then
    assert embedded == [5, 0, 0, 0, 0]
    assert len(hash_embeddings.calls) == 1
    assert sorted(hash_embeddings.calls[0]) == texts
    assert store_writes == [5]
    vectors = message_vectors(*[entry.id for entry in entries])
    assert [vectors[entry.id].content for entry in entries] == texts
    assert {tuple(sorted(vector.metadata.items())) for vector in vectors.values()} == {
        (("agentId", "agent-1"), ("index", "messages"), ("threadId", "trip"), ("userId", "ana"))
    }


def test_a_batch_takes_the_entries_waiting_in_other_threads_oldest_first(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    store_writes: list[int],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    for thread_id in ("a", "b", "c"):
        services.create_thread("agent-1", thread_id=thread_id)
    turns = [("a", "a1"), ("b", "b1"), ("c", "c1"), ("a", "a2"), ("b", "b2"), ("c", "c2")]
    add_in_turn(django_capture_on_commit_callbacks, turns)
    # when
    embedded = drain(queued)
    # then
    assert embedded == [6, 0, 0, 0, 0, 0]
    assert texts_per_call(hash_embeddings) == [sorted(text for _, text in turns)]
    assert store_writes == [6]


def test_entries_of_several_tenants_share_a_call_and_each_keeps_its_own_scope(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", {"userId": "ana"}, thread_id="ana-trip")
    services.create_thread("agent-1", {"userId": "cy"}, thread_id="cy-trip")
    services.create_thread("agent-2", {"userId": "bo"}, thread_id="bo-trip")
    entries = add_in_turn(
        django_capture_on_commit_callbacks,
        [("ana-trip", "ana 1"), ("bo-trip", "bo 1"), ("cy-trip", "cy 1"), ("ana-trip", "ana 2")],
    )
    # when
    embedded = drain(queued)
    # then
    assert embedded == [4, 0, 0, 0]
    assert texts_per_call(hash_embeddings) == [["ana 1", "ana 2", "bo 1", "cy 1"]]
    vectors = message_vectors(*[entry.id for entry in entries])
    assert {entry.content: scope_of(vectors[entry.id]) for entry in entries} == {
        "ana 1": ("agent-1", "ana-trip", "ana"),
        "bo 1": ("agent-2", "bo-trip", "bo"),
        "cy 1": ("agent-1", "cy-trip", "cy"),
        "ana 2": ("agent-1", "ana-trip", "ana"),
    }
    assert found_by("agent-1", "ana") == ["ana 1", "ana 2"]
    assert found_by("agent-1", "cy") == ["cy 1"]
    assert found_by("agent-2", "bo") == ["bo 1"]


def test_a_batch_across_threads_holds_at_most_batch_size_entries_oldest_first(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", {"userId": "ana"}, thread_id="a")
    services.create_thread("agent-2", {"userId": "bo"}, thread_id="b")
    turns = [("a", "a1"), ("b", "b1"), ("a", "a2"), ("b", "b2"), ("a", "a3"), ("b", "b3")]
    add_in_turn(django_capture_on_commit_callbacks, [*turns, ("a", "a4")])
    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {**HASH_EMBEDDINGS, "BATCH_SIZE": 3}}):
        embedded = drain(queued)
    # then
    assert embedded == [3, 3, 1, 0, 0, 0, 0]
    assert texts_per_call(hash_embeddings) == [["a1", "a2", "b1"], ["a3", "b2", "b3"], ["a4"]]


def test_a_batch_takes_its_own_entries_first_then_those_waiting_longest(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="a")
    services.create_thread("agent-1", thread_id="b")
    add_in_turn(django_capture_on_commit_callbacks, [("b", "older"), ("b", "newer"), ("a", "a1")])
    *earlier_tasks, a1_task = queued
    # when the task of a1 runs first
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {**HASH_EMBEDDINGS, "BATCH_SIZE": 2}}):
        embedded = drain([a1_task, *earlier_tasks])
    # then
    assert embedded == [2, 1, 0]
    assert texts_per_call(hash_embeddings) == [["a1", "older"], ["newer"]]


def test_session_events_of_other_threads_take_no_place_in_a_batch(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="a")
    services.create_thread("agent-1", thread_id="b")
    add_in_turn(django_capture_on_commit_callbacks, [("a", "a1")])
    with django_capture_on_commit_callbacks(execute=True):
        services.add_entry("b", type="label", event={"label": "booked"})
    add_in_turn(django_capture_on_commit_callbacks, [("b", "b1")])
    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {**HASH_EMBEDDINGS, "BATCH_SIZE": 2}}):
        embedded = drain(queued)
    # then
    assert embedded == [2, 0]
    assert texts_per_call(hash_embeddings) == [["a1", "b1"]]


def test_entries_given_an_earlier_created_at_are_batched_with_their_thread(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given: an import of old messages, each dated before the one added before it
    services.create_thread("agent-1", thread_id="imported")
    last_year = timezone.now() - timedelta(days=365)
    for days, text in enumerate(["first", "second", "third"]):
        with django_capture_on_commit_callbacks(execute=True):
            services.add_entry(
                "imported", role="user", content=text, created_at=last_year - timedelta(days=days)
            )
    # when
    embedded = drain(queued)
    # then
    assert embedded == [3, 0, 0]
    assert texts_per_call(hash_embeddings) == [["first", "second", "third"]]


def test_a_task_whose_entries_have_vectors_takes_the_entries_waiting_in_other_threads(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="a")
    services.create_thread("agent-1", thread_id="b")
    done, waiting = add_in_turn(django_capture_on_commit_callbacks, [("a", "a1"), ("b", "b1")])
    message_index.index_entries([done.id])
    hash_embeddings.calls.clear()
    # when
    embedded = drain(queued[:1])
    # then a1 is not sent again, and b1 is embedded
    assert embedded == [1]
    assert hash_embeddings.calls == [["b1"]]
    assert list(message_vectors(waiting.id)) == [waiting.id]
    assert not PendingVector.objects.exists()


def test_entries_redacted_or_deleted_before_their_batch_runs_get_no_vector(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    store_writes: list[int],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="trip")
    first, secret, gone, last = add_messages(
        django_capture_on_commit_callbacks, "trip", ["hello", "my card 4111", "oops", "bye"]
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.redact_entry(secret.id, reason="card number")
        services.delete_entry(gone.id)
    # when
    drain(queued)
    # then
    assert [sorted(call) for call in hash_embeddings.calls] == [["bye", "hello"]]
    assert store_writes == [2]
    assert sorted(message_vectors(first.id, secret.id, gone.id, last.id)) == sorted(
        [first.id, last.id]
    )


def test_entries_of_other_threads_redacted_or_deleted_before_the_batch_get_no_vector(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    store_writes: list[int],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="a")
    services.create_thread("agent-2", thread_id="b")
    first, secret, gone, last = add_in_turn(
        django_capture_on_commit_callbacks,
        [("a", "hello"), ("b", "my card 4111"), ("b", "oops"), ("b", "bye")],
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.redact_entry(secret.id, reason="card number")
        services.delete_entry(gone.id)
    # when
    drain(queued)
    # then
    assert texts_per_call(hash_embeddings) == [["bye", "hello"]]
    assert store_writes == [2]
    assert sorted(message_vectors(first.id, secret.id, gone.id, last.id)) == sorted(
        [first.id, last.id]
    )


def test_a_batch_holds_at_most_batch_size_entries(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="trip")
    add_messages(django_capture_on_commit_callbacks, "trip", [f"m{n}" for n in range(5)])
    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {**HASH_EMBEDDINGS, "BATCH_SIZE": 2}}):
        embedded = drain(queued)
    # then
    assert embedded == [2, 2, 1, 0, 0]
    assert [len(call) for call in hash_embeddings.calls] == [2, 2, 1]


def test_a_redelivered_task_of_an_embedded_batch_sends_nothing(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="trip")
    add_messages(django_capture_on_commit_callbacks, "trip", ["one", "two"])
    drain(queued)
    # when
    embedded = drain(queued)
    # then
    assert embedded == [0, 0]
    assert len(hash_embeddings.calls) == 1


def test_redelivered_tasks_of_a_batch_across_threads_send_nothing(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", {"userId": "ana"}, thread_id="a")
    services.create_thread("agent-2", {"userId": "bo"}, thread_id="b")
    add_in_turn(django_capture_on_commit_callbacks, [("a", "a1"), ("b", "b1"), ("a", "a2")])
    drain(queued)
    # when
    embedded = drain(queued)
    # then
    assert embedded == [0, 0, 0]
    assert len(hash_embeddings.calls) == 1


def test_the_task_of_an_entry_a_batch_took_sends_nothing(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="trip")
    add_messages(django_capture_on_commit_callbacks, "trip", ["one", "two"])
    first, second = queued
    drain([first])
    hash_embeddings.calls.clear()
    # when
    embedded = drain([second])
    # then
    assert embedded == [0]
    assert hash_embeddings.calls == []


def test_all_indexed_tells_whether_every_entry_has_a_message_vector(
    django_capture_on_commit_callbacks: Any, queued: list[list[str]]
) -> None:
    # given
    services.create_thread("agent-1", thread_id="trip")
    done, waiting = add_messages(django_capture_on_commit_callbacks, "trip", ["one", "two"])
    message_index.index_entries([done.id])
    # then
    assert message_index.all_indexed([done.id])
    assert not message_index.all_indexed([done.id, waiting.id])
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {}}):
        assert not message_index.all_indexed([done.id])


def test_a_reindex_page_is_one_provider_call_and_one_store_write(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    store_writes: list[int],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", thread_id="trip")
    add_messages(django_capture_on_commit_callbacks, "trip", [f"m{n}" for n in range(7)])
    # when
    done = message_index.reindex(thread_id="trip", batch_size=3)
    # then
    assert done.embedded == 7
    assert [len(call) for call in hash_embeddings.calls] == [3, 3, 1]
    assert store_writes == [3, 3, 1]
