"""End to end: a real Celery worker of the project (``tests/tasks/workers.py``), on the
local Redis broker and on the test's own database, keeps the message index in step with the
entries the test writes, and runs the periodic sweeper tasks.

The worker is ``celery -A project worker --pool=solo`` in a subprocess, told its database
by ``DATABASE_URL`` (the test database: the SQLite file of this process, or the test
database on the embedded PostgreSQL) and its embedding provider by
``COGITATOR_MEMORY_EMBEDDINGS_*`` variables read in ``project/settings.py``. The test
process sends the tasks through Redis instead of running them eagerly, to a queue of this
run's own on database 14, so runs side by side never take each other's tasks.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from cogitator_memory.embeddings.entry_vectors import DELETE_SOURCES
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import StoredEmbedding
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.tasks.sweeper import prune_vectors_task, sweep_outbox_task
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread
from tests.embeddings.fakes import HASH_EMBEDDINGS
from tests.tasks.workers import Worker, running_worker, sending_to, wait_until

# The worker's embedding settings: those of the test process (HASH_EMBEDDINGS).
WORKER_EMBEDDINGS = {
    "COGITATOR_MEMORY_EMBEDDINGS_PROVIDER": HASH_EMBEDDINGS["PROVIDER"],
    "COGITATOR_MEMORY_EMBEDDINGS_MODEL": HASH_EMBEDDINGS["MODEL"],
    "COGITATOR_MEMORY_EMBEDDINGS_DIMENSIONS": str(HASH_EMBEDDINGS["DIMENSIONS"]),
    "COGITATOR_MEMORY_EMBEDDINGS_STORE": HASH_EMBEDDINGS["STORE"],
}

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def worker(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    folder = tmp_path_factory.mktemp("worker")
    with running_worker(folder, "message-index", WORKER_EMBEDDINGS) as running:
        yield running


@pytest.fixture
def sent_to_worker(worker: Worker) -> Iterator[Worker]:
    """Tasks of this process go to the worker, and the message index is on with the
    worker's settings."""
    with (
        sending_to(worker),
        override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}),
    ):
        yield worker


def vectors_of(*entry_ids: str) -> list[StoredEmbedding]:
    return get_embedding_store().get_by_sources(list(entry_ids))


def add_entries(thread_id: str) -> list[Entry]:
    return [
        services.add_entry(thread_id, role="user", content="Where did we stay last April?"),
        services.add_entry(thread_id, role="assistant", content="At the Lisbon flat."),
        services.add_entry(
            thread_id, type="tool_result", tool_call_id="call-1", content="3 nights, 420 EUR"
        ),
    ]


def test_the_worker_embeds_each_new_entry_with_its_thread_scope(
    sent_to_worker: Worker,
) -> None:
    # given
    services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-1")
    # when
    entries = add_entries("ana-1")
    # then
    ids = [entry.id for entry in entries]
    wait_until(sent_to_worker, lambda: len(vectors_of(*ids)) == 3, "three vectors stored")
    vectors = {vector.source_id: vector for vector in vectors_of(*ids)}
    assert [vectors[entry_id].content for entry_id in ids] == [
        "Where did we stay last April?",
        "At the Lisbon flat.",
        "3 nights, 420 EUR",
    ]
    assert {tuple(sorted(vector.metadata.items())) for vector in vectors.values()} == {
        (("agentId", "concierge"), ("index", "messages"), ("threadId", "ana-1"), ("userId", "ana"))
    }


def test_deleted_and_redacted_entries_lose_their_vectors_at_once_with_no_task(
    sent_to_worker: Worker,
) -> None:
    # given
    services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-2")
    deleted, redacted, kept = (entry.id for entry in add_entries("ana-2"))
    wait_until(
        sent_to_worker,
        lambda: len(vectors_of(deleted, redacted, kept)) == 3,
        "three vectors stored",
    )
    # when
    services.delete_entry(deleted)
    services.redact_entry(redacted, reason="asked to forget")
    # then the vectors went with the change itself, before any task could run
    assert vectors_of(deleted, redacted) == []
    assert [vector.source_id for vector in vectors_of(kept)] == [kept]


def test_the_sweeper_task_runs_in_the_worker_and_carries_out_the_outbox(
    sent_to_worker: Worker,
) -> None:
    # given vectors whose entries went behind the index's back, and an outbox message that
    # could not be published when its change committed
    services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-3")
    orphaned, swept, kept = (entry.id for entry in add_entries("ana-3"))
    wait_until(sent_to_worker, lambda: len(vectors_of(orphaned, swept, kept)) == 3, "vectors")
    Entry.objects.filter(thread_id="ana-3").update(parent=None)
    Thread.objects.filter(pk="ana-3").update(active_leaf=None)
    Entry.objects.filter(pk__in=[orphaned, swept]).delete()
    OutboxMessage.objects.create(topic=DELETE_SOURCES, payload={"source_ids": [swept]})
    # when beat's two tasks reach the worker
    sweep_outbox_task.delay()
    prune_vectors_task.delay()
    # then
    wait_until(
        sent_to_worker,
        lambda: not OutboxMessage.objects.exists() and vectors_of(orphaned, swept) == [],
        "the outbox carried out and the orphaned vector pruned",
    )
    assert [vector.source_id for vector in vectors_of(kept)] == [kept]
