"""End to end: with a real Celery worker of the project embedding new entries (on the
local Redis broker and the test's own database), a fork's copies are not embedded again:
they took their originals' vectors in the fork's transaction, and the embedding tasks of
the copies find them present.

The worker's provider (``LoggedHashEmbeddings``) writes every text it is sent to a file
this test reads; the worker's log tells when its tasks have run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from cogitator_memory.embeddings.models import PendingVector
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.embeddings.fakes import EMBEDDINGS_LOG_VARIABLE, HASH_EMBEDDINGS, HashEmbeddings
from tests.tasks.workers import Worker, running_worker, sending_to, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TASK_DONE = "embed_entries_task["


class EmbeddingWorker:
    """The worker and the file its provider writes the texts it embeds to."""

    def __init__(self, worker: Worker, texts_path: Path) -> None:
        self.worker = worker
        self.texts_path = texts_path

    def texts(self) -> list[str]:
        """Every text the worker sent to its provider, in order."""
        if not self.texts_path.exists():
            return []
        return [json.loads(line) for line in self.texts_path.read_text().splitlines()]

    def tasks_done(self) -> int:
        """How many embedding tasks the worker finished."""
        return sum(
            1
            for line in self.worker.log().splitlines()
            if TASK_DONE in line and "succeeded" in line
        )


@pytest.fixture(scope="module")
def embedding_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddingWorker]:
    folder = tmp_path_factory.mktemp("fork-worker")
    texts_path = folder / "embedded.jsonl"
    settings = {
        "COGITATOR_MEMORY_EMBEDDINGS_PROVIDER": "tests.embeddings.fakes.LoggedHashEmbeddings",
        "COGITATOR_MEMORY_EMBEDDINGS_MODEL": HASH_EMBEDDINGS["MODEL"],
        "COGITATOR_MEMORY_EMBEDDINGS_DIMENSIONS": str(HASH_EMBEDDINGS["DIMENSIONS"]),
        "COGITATOR_MEMORY_EMBEDDINGS_STORE": HASH_EMBEDDINGS["STORE"],
        EMBEDDINGS_LOG_VARIABLE: str(texts_path),
    }
    with running_worker(folder, "fork-vectors", settings) as running:
        yield EmbeddingWorker(running, texts_path)


@pytest.fixture
def sent_to_worker(embedding_worker: EmbeddingWorker) -> Iterator[EmbeddingWorker]:
    """Tasks of this process go to the worker; the message index is on here too (the
    fork's transaction copies the vectors in this process), with the same vectors."""
    HashEmbeddings.reset()
    with (
        sending_to(embedding_worker.worker),
        override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}),
    ):
        yield embedding_worker
    HashEmbeddings.reset()


def with_vectors(*entry_ids: str) -> set[str]:
    return {vector.source_id for vector in get_embedding_store().get_by_sources(entry_ids)}


TURNS = [
    ("user", "Where did we stay last April?"),
    ("assistant", "At the Lisbon flat."),
    ("user", "Book it again for May."),
]


def test_the_worker_embeds_none_of_a_forks_copies_and_embeds_a_turn_added_after(
    sent_to_worker: EmbeddingWorker,
) -> None:
    # given a thread the worker embedded
    services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-fork-origin")
    entries = [
        services.add_entry("ana-fork-origin", role=role, content=text) for role, text in TURNS
    ]
    ids = [entry.pk for entry in entries]
    wait_until(sent_to_worker.worker, lambda: with_vectors(*ids) == set(ids), "vectors stored")
    wait_until(
        sent_to_worker.worker,
        lambda: not PendingVector.objects.filter(entry__thread_id="ana-fork-origin").exists(),
        "pending vectors done",
    )
    assert sorted(sent_to_worker.texts()) == sorted(text for _role, text in TURNS)
    done_before = sent_to_worker.tasks_done()
    # when the thread is forked and the worker gets a task for each copy
    fork = services.fork_thread("ana-fork-origin", ids[-1], new_thread_id="ana-fork")
    copies = list(Entry.objects.filter(thread_id=fork.pk).values_list("pk", flat=True))
    wait_until(
        sent_to_worker.worker,
        lambda: not PendingVector.objects.filter(entry__thread_id=fork.pk).exists(),
        "the copies' pending vectors done",
    )
    assert sent_to_worker.tasks_done() > done_before
    # then the copies have vectors and the worker sent none of their texts again
    assert with_vectors(*copies) == set(copies)
    assert sorted(sent_to_worker.texts()) == sorted(text for _role, text in TURNS)
    assert HashEmbeddings.calls == []
    # and a turn added to the fork afterwards is embedded by the worker, alone
    added = services.add_entry(fork.pk, role="user", content="Make it two weeks instead.")
    wait_until(sent_to_worker.worker, lambda: with_vectors(added.pk) == {added.pk}, "embedded")
    assert sent_to_worker.texts()[len(TURNS) :] == ["Make it two weeks instead."]
