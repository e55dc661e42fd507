"""End to end: a real Celery worker of the project, on the local Redis broker and the
test's own database, extracts a thread's memory items with the scripted model; the same
task delivered twice writes them once."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from cogitator_memory.items.models import ExtractionRun, ExtractionWindow, MemoryItem
from cogitator_memory.tasks.extraction import extract_thread_task
from cogitator_memory.threads import services
from tests.tasks.workers import Worker, running_worker, sending_to, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

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


@pytest.fixture(scope="module")
def extraction_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    folder = tmp_path_factory.mktemp("extraction-worker")
    script = folder / "answers.json"
    script.write_text(json.dumps([{"text": json.dumps(ANSWER), "repeat": True}]))
    settings = {
        "COGITATOR_MEMORY_LLM_PROVIDER": "scripted",
        "COGITATOR_MEMORY_LLM_SCRIPT": str(script),
    }
    with running_worker(folder, "extraction", settings) as running:
        yield running


@pytest.fixture
def sent_to_worker(extraction_worker: Worker) -> Iterator[Worker]:
    with sending_to(extraction_worker):
        yield extraction_worker


def test_the_worker_extracts_and_a_redelivered_task_adds_nothing(
    sent_to_worker: Worker,
) -> None:
    # given
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-x")
    services.add_entry(thread.pk, role="user", content="I live in Lisbon.")
    # when the task is delivered twice
    extract_thread_task.delay(thread.pk)
    extract_thread_task.delay(thread.pk)
    # then both ran, and the window and its item were written once
    wait_until(
        sent_to_worker,
        lambda: (
            sent_to_worker.log().count("extract_thread_task") >= 4
            and sent_to_worker.log().count("succeeded") >= 2
        ),
        "both deliveries ran",
    )
    assert ExtractionWindow.objects.filter(thread_id="ana-x").count() == 1
    [item] = MemoryItem.objects.all()
    assert (item.value, item.status, item.user_id) == ("Lisbon", "suggested", "ana")
    assert Path(sent_to_worker.log_path).exists()


def test_an_extraction_asked_for_through_the_api_runs_on_the_worker(
    sent_to_worker: Worker, settings: Any
) -> None:
    # given a thread, and a model configured here too (the request checks there is one)
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted"}}
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-api")
    services.add_entry(thread.pk, role="user", content="I live in Lisbon.")
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("worker-admin"))
    # when
    accepted = client.post(f"/api/memory/threads/{thread.pk}/extract/")
    # then the run is queued, and the worker takes it to done
    assert accepted.status_code == 202
    run_url = accepted["Location"]

    def status() -> dict[str, Any]:
        return dict(client.get(run_url).json())

    wait_until(sent_to_worker, lambda: status()["status"] in {"done", "failed"}, "the run ended")
    run = status()
    assert (run["status"], run["items_written"], run["windows_done"], run["attempts"]) == (
        "done",
        1,
        1,
        1,
    )
    assert MemoryItem.objects.get(thread_id=None, user_id="ana").value == "Lisbon"


def test_turns_posted_after_an_extraction_run_are_extracted_by_the_next(
    sent_to_worker: Worker, settings: Any
) -> None:
    # given extraction after new turns, debounced by a second, on the worker
    settings.COGITATOR_MEMORY = {
        "LLM": {"PROVIDER": "scripted"},
        "EXTRACTION": {"ENABLED": True, "DEBOUNCE_SECONDS": 1},
    }
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-later")
    first = services.add_entry(thread.pk, role="user", content="I live in Lisbon.")

    def read_through(entry_id: str) -> Callable[[], bool]:
        return lambda: ExtractionWindow.objects.filter(
            thread_id=thread.pk, last_entry_id=entry_id
        ).exists()

    wait_until(sent_to_worker, read_through(first.pk), "the first turn extracted")
    # when more turns come after that run
    later = [
        services.add_entry(thread.pk, role="user", content=f"And I work in Porto, day {n}.")
        for n in range(3)
    ]
    # then a run of their own reads them, one run for the three
    wait_until(sent_to_worker, read_through(later[-1].pk), "the later turns extracted")
    # The window is written before its run is closed: wait for the close, not its absence.
    wait_until(
        sent_to_worker,
        lambda: set(ExtractionRun.objects.values_list("status", flat=True)) == {"done"},
        "both runs closed",
    )
    assert ExtractionRun.objects.filter(thread_id=thread.pk).count() == 2
