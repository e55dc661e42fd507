"""Forgetting holds while the broker and a store outside the database are down.

Deleting or redacting entries, and moving a thread to another user, writes an outbox
message in the same transaction when the vectors live in Qdrant. With the broker down
and Qdrant refusing every change, the message stays; searches meanwhile return nothing
that went (they check each hit against the entry and thread it names); once Qdrant is
back, the sweeper task carries the messages out, and no point of what went is left.
Where the vectors live in the database (the exact store here, pgvector alike) they go in
the transaction itself, whatever the broker does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.grants import Grants
from cogitator_memory.outbox import services as outbox
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.search.hybrid import hybrid_search, semantic_search
from cogitator_memory.tasks.sweeper import sweep_outbox_task
from cogitator_memory.threads import services
from tests.search.support import CONCEPT_PROVIDER

pytestmark = pytest.mark.django_db

# Celery with a broker nobody answers on: anything enqueued after commit is lost.
BROKER_DOWN = {"CELERY_TASK_ALWAYS_EAGER": False, "CELERY_BROKER_URL": "redis://127.0.0.1:1/0"}
QUERY = "dinner plans"


class Outage(ConnectionError):
    pass


@pytest.fixture
def qdrant() -> Iterator[None]:
    settings = {
        "EMBEDDINGS": {"PROVIDER": CONCEPT_PROVIDER, "STORE": "qdrant", "QDRANT_PATH": ":memory:"}
    }
    with override_settings(COGITATOR_MEMORY=settings):
        yield
        get_embedding_store().close()  # type: ignore[attr-defined]


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Callable[[], Any]:
    """Runs what the services leave for after commit, as a real commit would."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def point_sources() -> set[str]:
    store = get_embedding_store()
    return {source for batch in store.iter_source_ids() for source in batch}


def searched(grants: Grants) -> set[str]:
    everything = EmbeddingFilter()
    by_vector = semantic_search(QUERY, limit=20, filter=everything, grants=grants)
    fused = hybrid_search(QUERY, limit=20, filter=everything, grants=grants).hits
    return {hit.embedding.source_id for hit in [*by_vector, *fused]}


def test_qdrant_down_leaves_an_outbox_that_the_sweeper_finishes(
    qdrant: None, committed: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given two threads of agent a1 (users u1 and u2) with messages in Qdrant
    kept_thread = services.create_thread("a1", {"userId": "u1"}, thread_id="t-kept")
    moved_thread = services.create_thread("a1", {"userId": "u1"}, thread_id="t-moved")
    kept = services.add_entry(kept_thread.pk, role="user", content="dinner plans kept")
    deleted = services.add_entry(kept_thread.pk, role="user", content="dinner plans deleted")
    redacted = services.add_entry(kept_thread.pk, role="user", content="dinner plans redacted")
    moved = services.add_entry(moved_thread.pk, role="user", content="dinner plans moved")
    message_index.index_entries([kept.pk, deleted.pk, redacted.pk, moved.pk])
    u1 = Grants.for_agents(["a1"], {"a1": ["u1"]})
    assert searched(u1) == {kept.pk, deleted.pk, redacted.pk, moved.pk}

    # when the broker is down and Qdrant refuses every change
    store = get_embedding_store()

    def refuse(*args: Any, **kwargs: Any) -> int:
        raise Outage("qdrant is down")

    monkeypatch.setattr(store, "delete_by_sources", refuse)
    monkeypatch.setattr(store, "set_owner", refuse)
    with override_settings(**BROKER_DOWN):
        with committed():
            services.delete_entry(deleted.pk)
        with committed():
            services.redact_entry(redacted.pk, reason="asked")
        with committed():
            services.update_thread(moved_thread.pk, {"userId": "u2"})

    # then the changes wait in the outbox, the points are still in Qdrant ...
    assert outbox.pending() == 3
    assert set(OutboxMessage.objects.values_list("attempts", flat=True)) == {1}
    assert point_sources() == {kept.pk, deleted.pk, redacted.pk, moved.pk}
    # ... and no search returns what went, nor the moved thread to its former user (its
    # new user finds it once the payload follows, below)
    u2 = Grants.for_agents(["a1"], {"a1": ["u2"]})
    assert searched(u1) == {kept.pk}
    assert searched(u2) == set()
    assert searched(Grants.everything()) == {kept.pk, moved.pk}

    # when Qdrant is back, and the backoff has passed, the sweeper runs
    monkeypatch.undo()
    OutboxMessage.objects.update(next_attempt_at=timezone.now())
    result = sweep_outbox_task.apply().get()

    # then every message is done, and Qdrant holds nothing of what went
    assert result == {"done": 3, "failed": 0}
    assert outbox.pending() == 0
    assert point_sources() == {kept.pk, moved.pk}
    [moved_point] = get_embedding_store().get_by_sources([moved.pk])
    assert moved_point.metadata["userId"] == "u2"
    assert searched(u1) == {kept.pk}
    assert searched(u2) == {moved.pk}


def test_a_failed_message_backs_off_and_a_sweep_leaves_it_until_due(
    qdrant: None, committed: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a delete whose publication failed once
    thread = services.create_thread("a1")
    entry = services.add_entry(thread.pk, role="user", content="dinner plans")
    message_index.index_entries([entry.pk])
    store = get_embedding_store()
    monkeypatch.setattr(store, "delete_by_sources", lambda ids: (_ for _ in ()).throw(Outage()))
    with committed():
        services.delete_entry(entry.pk)
    monkeypatch.undo()
    # then its next attempt is put off (2 s after a first failure, doubling per attempt)
    [message] = OutboxMessage.objects.all()
    assert (message.attempts, message.last_error) == (1, "Outage: ")
    assert message.next_attempt_at >= message.created_at + timedelta(seconds=2)
    assert message.next_attempt_at <= timezone.now() + timedelta(seconds=2)
    # when the sweeper runs while the message is not yet due (a later attempt's backoff)
    OutboxMessage.objects.update(next_attempt_at=timezone.now() + timedelta(minutes=5))
    result = sweep_outbox_task.apply().get()
    # then it is left for later, and the point is still there
    assert result == {"done": 0, "failed": 0}
    assert OutboxMessage.objects.count() == 1
    assert point_sources() == {entry.pk}


def test_with_the_vectors_in_the_database_they_go_in_the_transaction(
    committed: Callable[[], Any],
) -> None:
    # given the exact store, and a broker that is down
    settings = {"EMBEDDINGS": {"PROVIDER": CONCEPT_PROVIDER, "STORE": "exact"}}
    with override_settings(COGITATOR_MEMORY=settings):
        thread = services.create_thread("a1", {"userId": "u1"})
        entries = [
            services.add_entry(thread.pk, role="user", content=f"dinner plans {n}")
            for n in range(3)
        ]
        message_index.index_entries([entry.pk for entry in entries])
        with override_settings(**BROKER_DOWN), committed():
            # when
            services.delete_entry(entries[0].pk)
            services.redact_entry(entries[1].pk)
            services.update_thread(thread.pk, {"userId": "u2"})
        # then nothing waits in an outbox and no row of what went is left
        assert outbox.pending() == 0
        assert set(Embedding.objects.values_list("source_id", "user_id")) == {(entries[2].pk, "u2")}
        assert searched(Grants.for_agents(["a1"], {"a1": ["u1"]})) == set()
        assert searched(Grants.for_agents(["a1"], {"a1": ["u2"]})) == {entries[2].pk}
