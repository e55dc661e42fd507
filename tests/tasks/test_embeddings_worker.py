"""End to end: a real Celery worker of the project, on the local Redis broker and on the
test's own database, keeps the message index in step with the entries the test writes, and
runs the periodic sweeper tasks.

The worker is ``celery -A project worker --pool=solo`` in a subprocess, told its database
by ``DATABASE_URL`` (the test database: the SQLite file of this process, or the test
database on the embedded PostgreSQL) and its embedding provider by
``COGITATOR_MEMORY_EMBEDDINGS_*`` variables read in ``project/settings.py``. The test
process sends the tasks through Redis instead of running them eagerly, to a queue of this
run's own on database 14, so runs side by side never take each other's tasks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
import redis
from celery import Celery
from django.db import connection
from django.test import override_settings

from cogitator_memory.embeddings.entry_vectors import DELETE_SOURCES
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import StoredEmbedding
from cogitator_memory.outbox.models import OutboxMessage
from cogitator_memory.tasks.sweeper import prune_vectors_task, sweep_outbox_task
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread
from project.celery import app as project_celery_app
from tests.embeddings.fakes import HASH_EMBEDDINGS

BASE_DIR = Path(__file__).resolve().parent.parent.parent
BROKER_URL = "redis://127.0.0.1:6379/14"
# Bounds each wait, worker start-up included (about 2 s).
WAIT_SECONDS = 20
POLL_SECONDS = 0.1

# Variables of this process that would leak into the worker's settings.
PROJECT_VARIABLES = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "DJANGO_SETTINGS_MODULE",
    "COGITATOR_TEST_DATABASE",
)
# The worker's embedding settings: those of the test process (HASH_EMBEDDINGS).
WORKER_EMBEDDINGS = {
    "COGITATOR_MEMORY_EMBEDDINGS_PROVIDER": HASH_EMBEDDINGS["PROVIDER"],
    "COGITATOR_MEMORY_EMBEDDINGS_MODEL": HASH_EMBEDDINGS["MODEL"],
    "COGITATOR_MEMORY_EMBEDDINGS_DIMENSIONS": str(HASH_EMBEDDINGS["DIMENSIONS"]),
    "COGITATOR_MEMORY_EMBEDDINGS_STORE": HASH_EMBEDDINGS["STORE"],
}

pytestmark = pytest.mark.django_db(transaction=True)


def worker_database_url() -> str:
    """The URL of the database this test process uses, for the worker."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    credentials = (
        f"{quote(settings['USER'] or '', safe='')}:{quote(settings['PASSWORD'] or '', safe='')}"
    )
    # The embedded server's URL names its socket directory in the query, which Django
    # keeps in OPTIONS.
    options = settings.get("OPTIONS") or {}
    host = str(settings["HOST"] or options.get("host") or "")
    port = str(settings["PORT"] or options.get("port") or "")
    if host.startswith("/"):
        # A Unix socket directory, as the embedded server gives.
        query = urlencode({"host": host, **({"port": port} if port else {})})
        return f"postgres://{credentials}@/{settings['NAME']}?{query}"
    return f"postgres://{credentials}@{host}:{port}/{settings['NAME']}"


class Worker:
    """A running worker and where it reads its tasks."""

    def __init__(self, queue: str, log_path: Path) -> None:
        self.queue = queue
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text()


def remove_queue_keys(broker: redis.Redis, queue: str) -> None:
    """Delete what this run left in Redis: its queue, bindings and control queue, and its
    worker in the shared binding sets (FLUSHDB would also empty a run beside this one)."""
    keys = list(broker.scan_iter(match=f"*{queue}*"))
    if keys:
        broker.delete(*keys)
    for key in broker.scan_iter(match="_kombu.binding.*"):
        members = [member for member in broker.smembers(key) if queue.encode() in member]
        if members:
            broker.srem(key, *members)
    # Expiry times kombu keeps of binding sets; drop those of sets no longer there.
    deadlines = "_kombu.binding_deadlines"
    for member in broker.zrange(deadlines, 0, -1):
        if not broker.exists(b"_kombu.binding." + member):
            broker.zrem(deadlines, member)


@pytest.fixture(scope="module")
def worker(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    broker = redis.Redis.from_url(BROKER_URL, socket_timeout=2)
    try:
        broker.ping()
    except redis.RedisError as error:
        pytest.fail(
            f"Redis does not answer on 127.0.0.1:6379 ({error}); start it with "
            "scripts/ensure-redis.sh (as root) or: redis-server --daemonize yes --port 6379"
        )
    queue = f"message-index-{uuid.uuid4().hex}"
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    env = {key: value for key, value in os.environ.items() if key not in PROJECT_VARIABLES}
    env.update(
        DJANGO_SETTINGS_MODULE="project.settings",
        CELERY_BROKER_URL=BROKER_URL,
        DATABASE_URL=worker_database_url(),
        **WORKER_EMBEDDINGS,
    )
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "project",
        "worker",
        "--pool=solo",
        # No cluster chatter: mingle alone waits a second for peers at start-up.
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
        "--loglevel=INFO",
        "--queues",
        queue,
        "--hostname",
        f"{queue}@%h",
    ]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
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
def sent_to_worker(worker: Worker) -> Iterator[Worker]:
    """Tasks of this process go through Redis to the worker's queue, not eagerly, and
    the message index is on with the worker's settings."""
    sender = Celery("message-index-sender", broker=BROKER_URL, set_as_current=False)
    sender.conf.update(
        task_always_eager=False,
        task_default_queue=worker.queue,
        task_serializer="json",
        accept_content=["json"],
    )
    # The tasks are shared tasks: each use resolves them in the current app.
    sender.set_current()
    try:
        with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS}):
            yield worker
    finally:
        project_celery_app.set_current()
        # Not force_close_all(): kombu shares the pool of a broker URL between apps.
        sender.close()


def vectors_of(*entry_ids: str) -> list[StoredEmbedding]:
    return get_embedding_store().get_by_sources(list(entry_ids))


def wait_until(worker: Worker, condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(
                f"After {WAIT_SECONDS} s, still not: {what}. (The worker reads its provider "
                "from COGITATOR_MEMORY_EMBEDDINGS_PROVIDER in project/settings.py.) "
                f"The worker's log:\n{worker.log()}"
            )
        time.sleep(POLL_SECONDS)


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
