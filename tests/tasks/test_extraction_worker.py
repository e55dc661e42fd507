"""End to end: a real Celery worker of the project, on the local Redis broker and the
test's own database, extracts a thread's memory items with the scripted model; the same
task delivered twice writes them once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from cogitator_memory.items.models import ExtractionWindow, MemoryItem
from cogitator_memory.tasks.extraction import extract_thread_task
from cogitator_memory.threads import services
from project.celery import app as project_celery_app
from tests.tasks.test_embeddings_worker import (
    BASE_DIR,
    BROKER_URL,
    PROJECT_VARIABLES,
    Worker,
    remove_queue_keys,
    wait_until,
    worker_database_url,
)

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
    broker = redis.Redis.from_url(BROKER_URL, socket_timeout=2)
    broker.ping()
    folder = tmp_path_factory.mktemp("extraction-worker")
    script = folder / "answers.json"
    script.write_text(json.dumps([{"text": json.dumps(ANSWER), "repeat": True}]))
    queue = f"extraction-{uuid.uuid4().hex}"
    log_path = folder / "worker.log"
    env = {key: value for key, value in os.environ.items() if key not in PROJECT_VARIABLES}
    env.update(
        DJANGO_SETTINGS_MODULE="project.settings",
        CELERY_BROKER_URL=BROKER_URL,
        DATABASE_URL=worker_database_url(),
        COGITATOR_MEMORY_LLM_PROVIDER="scripted",
        COGITATOR_MEMORY_LLM_SCRIPT=str(script),
    )
    command = [
        sys.executable, "-m", "celery", "-A", "project", "worker", "--pool=solo",
        "--without-heartbeat", "--without-gossip", "--without-mingle", "--loglevel=INFO",
        "--queues", queue, "--hostname", f"{queue}@%h",
    ]  # fmt: skip
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, cwd=BASE_DIR, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        yield Worker(queue, log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        remove_queue_keys(broker, queue)
        broker.close()


@pytest.fixture
def sent_to_worker(extraction_worker: Worker) -> Iterator[Worker]:
    sender = Celery("extraction-sender", broker=BROKER_URL, set_as_current=False)
    sender.conf.update(
        task_always_eager=False,
        task_default_queue=extraction_worker.queue,
        task_serializer="json",
        accept_content=["json"],
    )
    sender.set_current()
    try:
        yield extraction_worker
    finally:
        project_celery_app.set_current()
        sender.close()


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
