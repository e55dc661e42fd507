"""End to end: a real Celery worker of the project, on the local Redis broker and the
test's own database, compacts a thread that crossed its threshold, with the scripted
model; a second trigger while the run is open does nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from cogitator_memory.compaction.history import read_compacted_history
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.tasks.compaction import compact_thread
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.tasks.workers import Worker, running_worker, sending_to, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

THRESHOLD = {"ENABLED": True, "THRESHOLD": None, "MESSAGE_THRESHOLD": 4, "KEEP_RECENT": 1}


@pytest.fixture(scope="module")
def compaction_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    folder = tmp_path_factory.mktemp("compaction-worker")
    script = folder / "answers.json"
    script.write_text(json.dumps([{"text": "Ana lives in Lisbon.", "repeat": True}]))
    settings = {
        "COGITATOR_MEMORY_LLM_PROVIDER": "scripted",
        "COGITATOR_MEMORY_LLM_SCRIPT": str(script),
        "COGITATOR_MEMORY_COMPACTION_ENABLED": "true",
        "COGITATOR_MEMORY_COMPACTION_THRESHOLD": "none",
        "COGITATOR_MEMORY_COMPACTION_MESSAGE_THRESHOLD": "4",
        "COGITATOR_MEMORY_COMPACTION_KEEP_RECENT": "1",
    }
    with running_worker(folder, "compaction", settings) as running:
        yield running


@pytest.fixture
def sent_to_worker(compaction_worker: Worker, settings: Any) -> Iterator[Worker]:
    # This process triggers (it checks a model is configured and the threshold).
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted"}, "COMPACTION": THRESHOLD}
    with sending_to(compaction_worker):
        yield compaction_worker


def test_the_worker_compacts_a_thread_that_crossed_its_threshold(sent_to_worker: Worker) -> None:
    # given a thread whose fourth message crosses the threshold
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-long")
    for text in ("Hi.", "Hello.", "I live in Lisbon.", "Noted."):
        services.add_entry(thread.pk, role="user", content=text)
    # then the worker writes one compaction, and the run says so
    wait_until(
        sent_to_worker,
        lambda: CompactionRun.objects.filter(thread_id="ana-long", status="done").exists(),
        "the run ended",
    )
    [run] = CompactionRun.objects.filter(thread_id="ana-long")
    [compaction] = Entry.objects.filter(thread_id="ana-long", type="compaction")
    assert run.compaction_entry_id == compaction.pk
    assert compaction.event["summary"] == "Ana lives in Lisbon."
    history = read_compacted_history("ana-long")
    assert history[0].pk == compaction.pk
    # and the same task delivered again adds nothing
    compact_thread.apply_async(args=("ana-long",), kwargs={"run_id": run.pk})
    wait_until(
        sent_to_worker,
        lambda: sent_to_worker.log().count("succeeded") >= 2,
        "the redelivery ran",
    )
    assert Entry.objects.filter(thread_id="ana-long", type="compaction").count() == 1


def test_a_compaction_asked_for_through_the_api_runs_on_the_worker(
    sent_to_worker: Worker,
) -> None:
    thread = services.create_thread("concierge", {"userId": "ana"}, thread_id="ana-api")
    services.add_entry(thread.pk, role="user", content="I live in Lisbon.")
    services.add_entry(thread.pk, role="assistant", content="Noted.")
    client = APIClient()
    client.force_authenticate(User.objects.create_superuser("worker-admin"))
    accepted = client.post("/api/memory/threads/ana-api/compact/")
    assert accepted.status_code == 202
    run_url = accepted["Location"]

    def status() -> dict[str, Any]:
        return dict(client.get(run_url).json())

    wait_until(sent_to_worker, lambda: status()["status"] in {"done", "failed"}, "the run ended")
    run = status()
    assert (run["status"], run["forced"]) == ("done", True)
    assert Entry.objects.get(pk=run["compaction_entry_id"]).type == "compaction"
