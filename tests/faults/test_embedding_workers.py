"""The message index on real workers: two worker processes embed each entry once (no
batch taken twice), and a worker killed (SIGKILL) while the provider embeds a batch
leaves no entry without its vector once the next worker and the sweeper take over.

The workers' embedding provider counts what it embeds in a file (``failpoints.
CountingEmbeddings``: the vectors of the test process's ``HashEmbeddings``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import override_settings

from cogitator_memory.embeddings.models import Embedding, PendingVector
from cogitator_memory.jobs import sweep
from cogitator_memory.threads import services
from tests.embeddings.fakes import HASH_EMBEDDINGS
from tests.faults.points import FOLDER_VARIABLE, POINT_VARIABLE
from tests.tasks.test_embeddings_worker import WORKER_EMBEDDINGS
from tests.tasks.workers import running_worker, sending_to, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

WRITING = {"EMBEDDINGS": HASH_EMBEDDINGS, "JOBS": {"REPUBLISH_AFTER_SECONDS": 1}}


def worker_settings(folder: Path, point: str = "") -> dict[str, str]:
    return {
        **WORKER_EMBEDDINGS,
        "COGITATOR_MEMORY_EMBEDDINGS_PROVIDER": "tests.faults.failpoints.CountingEmbeddings",
        "COGITATOR_MEMORY_JOBS_LEASE_SECONDS": "2",
        POINT_VARIABLE: point,
        FOLDER_VARIABLE: str(folder),
    }


def embedded_texts(folder: Path) -> int:
    path = folder / "embedded"
    return sum(int(line) for line in path.read_text().split()) if path.exists() else 0


def nothing_waits() -> Callable[[], bool]:
    def done() -> bool:
        with override_settings(COGITATOR_MEMORY=WRITING):
            sweep()
        return not PendingVector.objects.exists()

    return done


def write_turns(threads: int, turns: int) -> list[str]:
    """Turns written one commit each, as users write them; their ids."""
    ids = []
    with override_settings(COGITATOR_MEMORY=WRITING):
        for n in range(threads):
            services.create_thread("concierge", {"userId": f"u{n}"}, thread_id=f"t{n}")
        for turn in range(turns):
            for n in range(threads):
                entry = services.add_entry(f"t{n}", role="user", content=f"turn {turn} of {n}")
                ids.append(entry.pk)
    return ids


def vectors_of(ids: list[str]) -> list[str]:
    return sorted(Embedding.objects.filter(source_id__in=ids).values_list("source_id", flat=True))


def test_two_worker_processes_embed_each_entry_once(tmp_path: Path) -> None:
    # given a worker of two processes, as deployed
    with (
        running_worker(
            tmp_path,
            "two-processes",
            worker_settings(tmp_path),
            processes=2,
            include=["tests.faults.failpoints"],
        ) as worker,
        sending_to(worker),
    ):
        # when 120 turns of 6 users are written, each sending its task
        ids = write_turns(threads=6, turns=20)
        wait_until(worker, nothing_waits(), "every entry embedded")
    # then each entry was embedded once: as many texts computed as vectors stored
    stored = vectors_of(ids)
    assert stored == sorted(ids)
    computed = embedded_texts(tmp_path)
    print(f"two processes: {computed} texts embedded for {len(stored)} vectors stored")
    assert computed == len(stored) == 120


def test_a_worker_killed_while_embedding_a_batch_leaves_no_entry_without_its_vector(
    tmp_path: Path,
) -> None:
    # given a worker that dies while the provider embeds its first batch
    (tmp_path / "armed").write_text("")
    (tmp_path / "once").write_text("")
    settings = worker_settings(tmp_path, point="embedding")
    with (
        running_worker(
            tmp_path,
            "killed-embedding",
            settings,
            include=["tests.faults.failpoints"],
            keep_queue=True,
        ) as first,
        sending_to(first),
    ):
        ids = write_turns(threads=3, turns=10)
        assert first.process is not None
        process = first.process
        wait_until(first, lambda: process.poll() is not None, "the worker killed")
        queue = first.queue
    assert (tmp_path / "kills").read_text().split() == ["embedding"]
    # when the next worker takes over, with the sweeper
    with (
        running_worker(
            tmp_path, "killed-embedding", settings, queue=queue, include=["tests.faults.failpoints"]
        ) as second,
        sending_to(second),
    ):
        wait_until(second, nothing_waits(), "every entry embedded")
    # then every entry has its vector, one each
    assert vectors_of(ids) == sorted(ids)
