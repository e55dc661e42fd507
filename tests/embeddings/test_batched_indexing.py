"""The message index embeds in batches: the entries waiting for their tasks go to the
provider in one call and to the store in one write, and a re-index page likewise.

The tasks of new entries are held back here (the trigger's ``delay`` records the ids)
and then run one after the other, as a worker drains a queue that filled while it was
busy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from django.test import override_settings

from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import StoredEmbedding
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
        embed_entries_task, "delay", side_effect=lambda entry_ids: ids.append(entry_ids)
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


def drain(queued: list[list[str]]) -> list[int]:
    """Run the queued tasks in order; what each embedded."""
    return [embed_entries_task.apply(args=[entry_ids]).get() for entry_ids in queued]


def message_vectors(*entry_ids: str) -> dict[str, StoredEmbedding]:
    return {vector.source_id: vector for vector in get_embedding_store().get_by_sources(entry_ids)}


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


def test_a_batch_takes_only_the_entries_of_its_own_thread_each_with_its_scope(
    django_capture_on_commit_callbacks: Any,
    queued: list[list[str]],
    hash_embeddings: type[HashEmbeddings],
) -> None:
    # given
    services.create_thread("agent-1", {"userId": "ana"}, thread_id="ana-trip")
    services.create_thread("agent-2", {"userId": "bo"}, thread_id="bo-trip")
    ana = add_messages(django_capture_on_commit_callbacks, "ana-trip", ["a1", "a2"])
    bo = add_messages(django_capture_on_commit_callbacks, "bo-trip", ["b1", "b2"])
    # when
    embedded = drain(queued)
    # then
    assert embedded == [2, 0, 2, 0]
    assert [sorted(call) for call in hash_embeddings.calls] == [["a1", "a2"], ["b1", "b2"]]
    vectors = message_vectors(*[entry.id for entry in ana + bo])
    assert {vectors[entry.id].metadata["agentId"] for entry in ana} == {"agent-1"}
    assert {vectors[entry.id].metadata["userId"] for entry in bo} == {"bo"}


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
    assert embedded == [2, 0, 2, 0, 1]
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
