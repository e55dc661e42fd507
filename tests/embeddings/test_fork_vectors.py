"""A fork's copies take their originals' vectors, with the fork's own scope, and no
provider call; a copy whose original has none is embedded as any new entry is.

Tasks run eagerly (CELERY_TASK_ALWAYS_EAGER in tests/settings.py), inside the on-commit
callbacks that ``django_capture_on_commit_callbacks(execute=True)`` runs: the embedding
tasks of the copies run as they would after a real commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import override_settings

from cogitator_memory.embeddings.fork_vectors import COPY_VECTORS
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import EmbeddingFilter, StoredEmbedding
from cogitator_memory.grants import Grants
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.outbox.services import drain
from cogitator_memory.search.hybrid import semantic_search
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.embeddings.fakes import HASH_EMBEDDINGS, HashEmbeddings, hash_vector

pytestmark = pytest.mark.django_db

Committed = Callable[[], Any]

TURNS = [
    ("user", "Lisbon or Porto for the long weekend?"),
    ("assistant", "Porto: the Douro valley is an hour away."),
    ("user", "Then book the river cruise on Saturday."),
    ("assistant", "Booked: Saturday 10:00, two seats."),
]


@pytest.fixture(
    params=["exact", pytest.param("pgvector", marks=pytest.mark.postgres_only), "qdrant"]
)
def store_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """The message index on each store: in the database (exact, and pgvector where the
    database is PostgreSQL) and outside it (Qdrant, in process)."""
    settings = {**HASH_EMBEDDINGS, "STORE": request.param}
    if request.param == "qdrant":
        settings["QDRANT_PATH"] = ":memory:"
    HashEmbeddings.reset()
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": settings}):
        yield request.param
        if request.param == "qdrant":
            get_embedding_store().close()  # type: ignore[attr-defined]
    HashEmbeddings.reset()


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any) -> Committed:
    """A block whose on-commit work (the outbox, signals, hence eager tasks) runs as it
    ends."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def vectors_of(*entry_ids: str) -> dict[str, StoredEmbedding]:
    return {vector.source_id: vector for vector in get_embedding_store().get_by_sources(entry_ids)}


def embedded_thread(committed: Committed, thread_id: str = "trip") -> list[Entry]:
    """A thread of Ana's whose every turn has its vector."""
    services.create_thread("concierge", {"userId": "ana"}, thread_id=thread_id)
    with committed():
        entries = [services.add_entry(thread_id, role=role, content=text) for role, text in TURNS]
    assert len(vectors_of(*(entry.pk for entry in entries))) == len(TURNS)
    return entries


def copies_of(fork_id: str) -> list[Entry]:
    return list(Entry.objects.filter(thread_id=fork_id).order_by("seq"))


def test_a_fork_of_embedded_turns_copies_their_vectors_and_calls_no_provider(
    store_name: str, committed: Committed
) -> None:
    # given
    entries = embedded_thread(committed)
    HashEmbeddings.reset()
    # when
    with committed():
        services.fork_thread("trip", entries[-1].pk, new_thread_id="trip-fork")
    # then no text went to the provider, from the fork or from the copies' tasks
    assert HashEmbeddings.calls == []
    copies = copies_of("trip-fork")
    vectors = vectors_of(*(copy.pk for copy in copies))
    assert [vectors[copy.pk].content for copy in copies] == [text for _role, text in TURNS]
    for copy in copies:
        vector = vectors[copy.pk]
        assert vector.vector == pytest.approx(hash_vector(vector.content), abs=1e-6)
        assert vector.metadata == {
            "index": "messages",
            "agentId": "concierge",
            "threadId": "trip-fork",
            "userId": "ana",
        }
    # and the originals keep theirs
    assert set(vectors_of(*(entry.pk for entry in entries))) == {entry.pk for entry in entries}
    assert not OutboxMessage.objects.exists()


def test_the_copies_are_found_by_vector_search_in_the_forks_scope(
    store_name: str, committed: Committed
) -> None:
    # given
    entries = embedded_thread(committed)
    with committed():
        services.fork_thread("trip", entries[-1].pk, new_thread_id="trip-fork")
    cruise = copies_of("trip-fork")[2]
    # when
    hits = semantic_search(TURNS[2][1], limit=1, filter=EmbeddingFilter(thread_id="trip-fork"))
    # then
    assert [hit.embedding.source_id for hit in hits] == [cruise.pk]
    assert hits[0].score == pytest.approx(1.0)


def test_a_fork_moved_to_another_user_keeps_none_of_its_origins_owner(
    store_name: str, committed: Committed
) -> None:
    # given a fork of Ana's thread, given to Bea
    entries = embedded_thread(committed)
    with committed():
        services.fork_thread("trip", entries[-1].pk, new_thread_id="bea-trip")
        services.update_thread("bea-trip", {"userId": "bea"})
    copies = {copy.pk for copy in copies_of("bea-trip")}
    # then its vectors are Bea's alone
    assert {vector.metadata.get("userId") for vector in vectors_of(*copies).values()} == {"bea"}
    # and a search of Ana's finds her own turns, none of Bea's copies, and Bea's hers
    ana = Grants.for_agents(["concierge"], {"concierge": ["ana"]})
    bea = Grants.for_agents(["concierge"], {"concierge": ["bea"]})
    anything = EmbeddingFilter()
    found_by_ana = {
        hit.embedding.source_id
        for hit in semantic_search(TURNS[2][1], limit=20, filter=anything, grants=ana)
    }
    found_by_bea = {
        hit.embedding.source_id
        for hit in semantic_search(TURNS[2][1], limit=20, filter=anything, grants=bea)
    }
    assert found_by_ana == {entry.pk for entry in entries}
    assert found_by_bea == copies


def test_a_copy_whose_original_has_no_vector_is_embedded_by_the_index(
    store_name: str, committed: Committed
) -> None:
    # given a thread whose second turn lost its vector
    entries = embedded_thread(committed)
    get_embedding_store().delete_by_sources([entries[1].pk])
    HashEmbeddings.reset()
    # when
    with committed():
        services.fork_thread("trip", entries[-1].pk, new_thread_id="trip-fork")
    # then only that text went to the provider (for the copy, and for its original, which
    # the copy's batch took with it), and every copy has its vector
    assert set(HashEmbeddings.texts()) == {TURNS[1][1]}
    copies = [copy.pk for copy in copies_of("trip-fork")]
    assert set(vectors_of(*copies)) == set(copies)


def test_an_entry_naming_an_original_of_other_text_gets_the_vector_of_its_own(
    store_name: str, committed: Committed
) -> None:
    # given an entry whose metadata names a turn of another thread as its original
    entries = embedded_thread(committed)
    services.create_thread("concierge", {"userId": "bea"}, thread_id="bea-notes")
    HashEmbeddings.reset()
    # when
    with committed():
        entry = services.add_entry(
            "bea-notes",
            role="user",
            content="Something else entirely.",
            metadata={"forkOf": entries[2].pk},
        )
    # then its vector is of its own text, from the provider
    assert HashEmbeddings.calls == [["Something else entirely."]]
    vector = vectors_of(entry.pk)[entry.pk]
    assert vector.vector == pytest.approx(hash_vector("Something else entirely."), abs=1e-6)


def test_a_fork_while_the_index_is_off_copies_nothing(committed: Committed) -> None:
    # given vectors stored while the index was on, then the index off
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}):
        entries = embedded_thread(committed)
    # when
    with committed():
        services.fork_thread("trip", entries[-1].pk, new_thread_id="trip-fork")
    # then
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}):
        assert vectors_of(*(copy.pk for copy in copies_of("trip-fork"))) == {}


def test_with_qdrant_the_copies_are_written_through_the_outbox_after_commit(
    committed: Committed,
) -> None:
    settings = {**HASH_EMBEDDINGS, "STORE": "qdrant", "QDRANT_PATH": ":memory:"}
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": settings}):
        try:
            entries = embedded_thread(committed)
            # when the fork commits without its on-commit work
            fork = services.fork_thread("trip", entries[-1].pk, new_thread_id="trip-fork")
            copies = [copy.pk for copy in copies_of(fork.pk)]
            # then an outbox message names the copies, and nothing is in Qdrant yet
            [message] = OutboxMessage.objects.all()
            assert message.topic == COPY_VECTORS
            assert set(message.payload["copies"]) == set(copies)
            assert vectors_of(*copies) == {}
            # and the sweeper's drain carries it out
            HashEmbeddings.reset()
            drain()
            assert set(vectors_of(*copies)) == set(copies)
            assert HashEmbeddings.calls == []
            assert not OutboxMessage.objects.exists()
        finally:
            get_embedding_store().close()  # type: ignore[attr-defined]
