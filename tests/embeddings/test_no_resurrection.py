"""Work still pending when something is forgotten never brings it back.

An embedding task of an entry or an item that went stores nothing, even when the entry
or item went while the provider was answering; an outbox message naming sources that are
gone deletes nothing, and an owner change of a thread that was deleted since reaches no
vector, in whatever order the sweeper carries them out. On the exact store (vectors in
the database) and on Qdrant (outside it, through the outbox).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.entry_vectors import DELETE_SOURCES, SET_OWNER
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.outbox import services as outbox
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.tasks.embeddings import embed_entries_task, embed_items_task
from cogitator_memory.threads import services as threads
from tests.lineage_support import FORGETTING_PROVIDER, ForgettingEmbeddings, tell_a_secret

pytestmark = pytest.mark.django_db


class Outage(ConnectionError):
    pass


@pytest.fixture(params=["exact", "qdrant"])
def store_name(request: pytest.FixtureRequest) -> Iterator[str]:
    settings: dict[str, Any] = {"PROVIDER": FORGETTING_PROVIDER, "STORE": request.param}
    if request.param == "qdrant":
        settings["QDRANT_PATH"] = ":memory:"
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": settings}):
        yield request.param
        ForgettingEmbeddings.meanwhile = None
        if request.param == "qdrant":
            get_embedding_store().close()  # type: ignore[attr-defined]


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[[], Any]:
    """Runs what the services leave for after commit, as a real commit would."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def stored_sources() -> set[str]:
    store = get_embedding_store()
    return {source for batch in store.iter_source_ids() for source in batch}


def test_a_pending_embedding_task_of_what_went_stores_nothing(
    store_name: str, committed: Callable[[], Any]
) -> None:
    # given an entry and an item, not embedded yet, that go before their tasks run
    told = tell_a_secret(embed=False)
    with committed():
        threads.delete_entry(told.entry.pk)
    assert not MemoryItem.objects.filter(pk=told.item.pk).exists()
    # when the tasks run (the entry's takes the other entry waiting, which stands)
    embed_entries_task.apply(args=([told.entry.pk],)).get()
    assert embed_items_task.apply(args=([told.item.pk],)).get() == 0
    # then nothing of what went was stored
    assert told.entry.pk not in stored_sources()
    assert told.item.pk not in stored_sources()


def test_an_entry_that_goes_while_the_provider_answers_gets_no_vector(
    store_name: str, committed: Callable[[], Any]
) -> None:
    # given an entry whose embedding is under way
    told = tell_a_secret(embed=False)

    def forget() -> None:
        with committed():
            threads.redact_entry(told.entry.pk, reason="asked")

    ForgettingEmbeddings.meanwhile = forget
    # when it is redacted while the provider answers
    embedded = message_index.index_entries([told.entry.pk, told.other.pk])
    # then only the entry that stands has a vector
    assert embedded == 1
    assert stored_sources() == {told.other.pk}


def test_an_item_purged_while_the_provider_answers_gets_no_vector(
    store_name: str, committed: Callable[[], Any]
) -> None:
    # given an item whose embedding is under way
    told = tell_a_secret(embed=False)

    def forget() -> None:
        with committed():
            threads.delete_entry(told.entry.pk)

    ForgettingEmbeddings.meanwhile = forget
    # when its entry goes while the provider answers
    stored = embed_items_task.apply(args=([told.item.pk],)).get()
    # then the item is gone and no vector of it was stored
    assert stored == 0
    assert not MemoryItem.objects.filter(pk=told.item.pk).exists()
    assert stored_sources() == set()


@pytest.mark.parametrize("order", ["as-written", "delete-first"])
def test_outbox_messages_of_a_thread_deleted_since_bring_nothing_back(
    committed: Callable[[], Any], monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    settings = {
        "EMBEDDINGS": {
            "PROVIDER": FORGETTING_PROVIDER,
            "STORE": "qdrant",
            "QDRANT_PATH": ":memory:",
        }
    }
    with override_settings(COGITATOR_MEMORY=settings):
        try:
            # given a thread whose message and item are in Qdrant
            told = tell_a_secret()
            message_index.index_entries([told.entry.pk, told.other.pk])
            assert stored_sources() == {told.entry.pk, told.other.pk, told.item.pk}
            # when, with Qdrant down, the thread moves to another user and is deleted
            store = get_embedding_store()

            def refuse(*args: Any, **kwargs: Any) -> int:
                raise Outage("qdrant is down")

            monkeypatch.setattr(store, "delete_by_sources", refuse)
            monkeypatch.setattr(store, "set_owner", refuse)
            with committed():
                threads.update_thread(told.thread.pk, {"userId": "u2"})
            with committed():
                threads.delete_thread(told.thread.pk)
            topics = list(OutboxMessage.objects.order_by("id").values_list("topic", flat=True))
            assert topics == [SET_OWNER, DELETE_SOURCES, DELETE_SOURCES]
            # and Qdrant is back, the sweeper carrying the messages out in either order
            monkeypatch.undo()
            if order == "delete-first":
                OutboxMessage.objects.filter(topic=SET_OWNER).update(
                    next_attempt_at=timezone.now() + timezone.timedelta(minutes=5)
                )
            OutboxMessage.objects.exclude(topic=SET_OWNER).update(next_attempt_at=timezone.now())
            if order == "as-written":
                OutboxMessage.objects.update(next_attempt_at=timezone.now())
            outbox.drain()
            OutboxMessage.objects.update(next_attempt_at=timezone.now())
            result = outbox.drain()
            # then every message is done, and nothing of the thread is left or comes back
            assert outbox.pending() == 0
            assert result.failed == 0
            assert stored_sources() == set()
            # and a delete of sources already gone is done, deleting nothing
            with committed():
                outbox.write(DELETE_SOURCES, {"source_ids": [told.entry.pk, told.item.pk]})
            assert outbox.pending() == 0
        finally:
            get_embedding_store().close()  # type: ignore[attr-defined]
