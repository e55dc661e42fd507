"""A real worker killed (SIGKILL) at each point of an extraction job, ``ROUNDS`` times
each (four in the full profile, two in CI): every job finishes, and nothing is lost or
doubled (items, evidence rows, windows read, vectors); a poison job (one whose every
delivery kills its worker) stops after three deliveries and is dead.

The worker is ``celery -A project worker --pool=solo`` with ``tests.faults.failpoints``
imported, which kills it at the armed point (``failpoints.POINTS``). After each kill a
new worker takes over the queue, and this process runs the sweeper as beat would
(``jobs.sweep``): a job whose worker was lost is taken again once its lease runs out
(two seconds here). The entries' vectors are embedded by the same worker, so a kill also
meets the tasks of the message index.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from cogitator_memory.embeddings.models import Embedding, PendingVector
from cogitator_memory.items.models import Evidence, ExtractionRun, ExtractionWindow, MemoryItem
from cogitator_memory.items.runs import request_extraction
from cogitator_memory.jobs import RunStatus, sweep
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.embeddings.fakes import HASH_EMBEDDINGS
from tests.examples import examples
from tests.faults.points import FOLDER_VARIABLE, POINT_VARIABLE, POINTS
from tests.tasks.test_embeddings_worker import WORKER_EMBEDDINGS
from tests.tasks.workers import Worker, running_worker, sending_to, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

# Jobs killed at each point: 4 in the full profile, 2 in CI (a second kill at the same
# point, on a queue a replaced worker left, is what the repetition adds).
ROUNDS = examples(full=4, ci=2)
LEASE_SECONDS = 2
ANSWER = [
    {
        "kind": "fact",
        "subject": "Ana",
        "attribute": "home city",
        "value": "Lisbon",
        "confidence": 0.9,
        "quotes": [{"message": 1, "text": "I live in Lisbon"}],
    }
]
# As the project's beat would: a job waiting with no message is sent again after 1 s.
# The model named here only lets this process ask for runs: the worker's answers.
SWEEPING = {
    "JOBS": {"REPUBLISH_AFTER_SECONDS": 1},
    "EMBEDDINGS": HASH_EMBEDDINGS,
    "LLM": {"PROVIDER": "scripted", "SCRIPT": None},
}


def worker_settings(folder: Path, point: str) -> dict[str, str]:
    return {
        **WORKER_EMBEDDINGS,
        "COGITATOR_MEMORY_LLM_PROVIDER": "tests.faults.failpoints.FailpointModel",
        "COGITATOR_MEMORY_JOBS_LEASE_SECONDS": str(LEASE_SECONDS),
        "COGITATOR_MEMORY_JOBS_RETRY_DELAY_SECONDS": "1",
        # Unacknowledged messages of a killed worker come back to the next one soon.
        "CELERY_VISIBILITY_TIMEOUT": "1",
        POINT_VARIABLE: point,
        FOLDER_VARIABLE: str(folder),
    }


class Workers:
    """One worker at a time on one queue: the next starts when the last was killed."""

    def __init__(self, folder: Path, point: str) -> None:
        self.folder = folder
        self.point = point
        self.queue: str | None = None
        self.stack = contextlib.ExitStack()
        self.current: Worker | None = None

    def start(self) -> Worker:
        self.stack.close()
        self.stack = contextlib.ExitStack()
        worker = self.stack.enter_context(
            running_worker(
                self.folder,
                f"kills-{self.point}",
                worker_settings(self.folder, self.point),
                queue=self.queue,
                include=["tests.faults.failpoints"],
                keep_queue=True,
            )
        )
        self.queue = worker.queue
        self.stack.enter_context(sending_to(worker))
        self.current = worker
        return worker

    def close(self) -> None:
        self.stack.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "answer.txt").write_text(json.dumps(ANSWER))
    return tmp_path


@pytest.fixture
def workers(folder: Path, request: pytest.FixtureRequest) -> Iterator[Workers]:
    callspec = getattr(request.node, "callspec", None)
    point = callspec.params["point"] if callspec is not None else "claimed"
    pool = Workers(folder, point)
    pool.start()
    try:
        yield pool
    finally:
        pool.close()


def kills(folder: Path) -> list[str]:
    path = folder / "kills"
    return path.read_text().split() if path.exists() else []


def converse(thread_id: str) -> list[Entry]:
    with override_settings(COGITATOR_MEMORY=SWEEPING):
        services.create_thread("concierge", {"userId": "ana"}, thread_id=thread_id)
        return [
            services.add_entry(thread_id, role="user", content="I live in Lisbon."),
            services.add_entry(thread_id, role="assistant", content="Noted, Lisbon it is."),
        ]


def finished(run_id: str, thread_id: str) -> Callable[[], bool]:
    """Whether the run is closed and the thread's entries wait for no vector, sweeping
    as beat would each time it is asked."""

    def done() -> bool:
        with override_settings(COGITATOR_MEMORY=SWEEPING):
            sweep()
        status = ExtractionRun.objects.get(pk=run_id).status
        waiting = PendingVector.objects.filter(entry__thread_id=thread_id).exists()
        return status in (RunStatus.DONE, RunStatus.FAILED, RunStatus.DEAD) and not waiting

    return done


def ask_for_extraction(thread_id: str) -> ExtractionRun:
    with override_settings(COGITATOR_MEMORY=SWEEPING):
        run, _created = request_extraction(thread_id)
    return run


def died(worker: Worker) -> Callable[[], bool]:
    """Whether the worker's process ended, sweeping as beat would each time it is asked
    (a job whose worker was lost is sent again once its lease runs out)."""
    assert worker.process is not None
    process = worker.process

    def ended() -> bool:
        with override_settings(COGITATOR_MEMORY=SWEEPING):
            sweep()
        return process.poll() is not None

    return ended


def counted(thread_id: str, entries: list[Entry]) -> dict[str, Any]:
    items = MemoryItem.objects.filter(evidence__entry__thread_id=thread_id).distinct()
    return {
        "run": ExtractionRun.objects.get(thread_id=thread_id).status,
        "items": items.count(),
        "evidence": Evidence.objects.filter(entry__thread_id=thread_id).count(),
        "windows": ExtractionWindow.objects.filter(thread_id=thread_id).count(),
        "vectors": sorted(
            Embedding.objects.filter(source_id__in=[entry.pk for entry in entries]).values_list(
                "source_id", flat=True
            )
        ),
        "item vectors per item": sorted(
            Embedding.objects.filter(source_id__in=[item.pk for item in items]).values_list(
                "source_id", flat=True
            )
        ),
    }


@pytest.mark.parametrize("point", POINTS)
def test_a_worker_killed_at_each_point_of_an_extraction_loses_and_doubles_nothing(
    workers: Workers, folder: Path, point: str
) -> None:
    (folder / "once").write_text("")
    for round_ in range(ROUNDS):
        # given a conversation, and the worker armed to die at the point
        (folder / "armed").write_text("")
        thread_id = f"kill-{point}-{round_}"
        entries = converse(thread_id)
        # when its extraction is asked for, the worker dies at the point
        run = ask_for_extraction(thread_id)
        killed = workers.current
        assert killed is not None
        wait_until(killed, died(killed), f"killed at {point}")
        assert kills(folder) == [point] * (round_ + 1)
        # and the next worker, with the sweeper, finishes the job
        worker = workers.start()
        wait_until(worker, finished(run.pk, thread_id), "the run and the vectors done")
        # then nothing was lost and nothing doubled
        found = counted(thread_id, entries)
        expected_vectors = sorted(entry.pk for entry in entries)
        assert found == {
            "run": RunStatus.DONE,
            "items": 1,
            "evidence": 1,
            "windows": 1,
            "vectors": expected_vectors,
            "item vectors per item": found["item vectors per item"],
        }, (point, round_, worker.log())
        assert len(found["item vectors per item"]) <= 1
    print(f"killed at {point}: {ROUNDS} of {ROUNDS} jobs done, 0 doubled, 0 lost")


def test_a_poison_job_stops_after_three_deliveries_and_is_dead(
    workers: Workers, folder: Path
) -> None:
    # given a job whose every delivery kills its worker (armed for good)
    (folder / "once").unlink(missing_ok=True)
    (folder / "armed").write_text("")
    entries = converse("poison")
    run = ask_for_extraction("poison")
    # when worker after worker takes it
    for delivery in range(1, 4):
        killed = workers.current
        assert killed is not None
        wait_until(killed, died(killed), f"delivery {delivery}")
        workers.start()
    worker = workers.current
    assert worker is not None
    wait_until(worker, finished(run.pk, "poison"), "the run closed")
    # then after three deliveries it is dead, and no fourth ran
    run.refresh_from_db()
    assert kills(folder) == ["claimed"] * 3
    assert (run.status, run.attempts) == (RunStatus.DEAD, 3)
    assert run.error == "Given up after 3 attempts. Its worker was lost while it ran."
    assert not MemoryItem.objects.exists()
    # and the worker that saw it dead is alive, and embedded the entries meanwhile
    assert worker.process is not None and worker.process.poll() is None
    assert Embedding.objects.filter(source_id__in=[entry.pk for entry in entries]).count() == 2
