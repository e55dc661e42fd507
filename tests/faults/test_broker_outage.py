"""Redis stopped while 200 turns are written: no write is lost or refused, and every job
(the entries' vectors, the threads' extractions) is done once Redis is back.

Redis here is a server of this test's own (``redis-server`` on a free port, no
persistence: what it held when it stopped is gone, as after a crash), the worker is a
real one of the project reading it, and this process runs the sweeper as beat would.
While Redis is down, each write commits and its jobs wait in the database, unsent; once
it is back, the sweeper sends them again.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from django.test import override_settings

from cogitator_memory.embeddings.models import Embedding, PendingVector
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.jobs import OPEN_RUN_STATUSES, RunStatus, sweep
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.embeddings.fakes import HASH_EMBEDDINGS
from tests.tasks.test_embeddings_worker import WORKER_EMBEDDINGS
from tests.tasks.workers import running_worker, sending_to, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 10
WRITES = 200
DOWN_AT, BACK_AT = 50, 150
# The writing process: extraction after each turn (no debounce), vectors, and a sweeper
# that sends again what waits unsent for a second.
WRITING = {
    "EMBEDDINGS": HASH_EMBEDDINGS,
    "EXTRACTION": {"ENABLED": True, "DEBOUNCE_SECONDS": 0},
    "LLM": {"PROVIDER": "scripted", "SCRIPT": None},
    "JOBS": {"REPUBLISH_AFTER_SECONDS": 1},
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """A redis-server of this test on ``port``, stopped and started at will."""

    def __init__(self, port: int, folder: Path) -> None:
        self.port = port
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed: scripts/ensure-redis.sh installs it.")
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def writing() -> Iterator[None]:
    with override_settings(COGITATOR_MEMORY=WRITING):
        yield


def all_done(thread_ids: list[str]) -> Callable[[], bool]:
    def done() -> bool:
        with writing():
            sweep()
        waiting = PendingVector.objects.exists()
        runs_open = ExtractionRun.objects.filter(status__in=OPEN_RUN_STATUSES).exists()
        return not waiting and not runs_open

    return done


def test_redis_stopped_during_200_writes_loses_nothing_and_every_job_is_done_after(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([{"text": "[]", "repeat": True}]))
    settings = {
        **WORKER_EMBEDDINGS,
        "COGITATOR_MEMORY_LLM_PROVIDER": "scripted",
        "COGITATOR_MEMORY_LLM_SCRIPT": str(answers),
        "COGITATOR_MEMORY_JOBS_LEASE_SECONDS": "5",
    }
    thread_ids = [f"outage-{n}" for n in range(THREADS)]
    with (
        running_worker(tmp_path, "outage", settings, broker_url=redis_server.url) as worker,
        sending_to(worker),
        writing(),
    ):
        for thread_id in thread_ids:
            services.create_thread("concierge", {"userId": "ana"}, thread_id=thread_id)
        written: list[str] = []
        refused = 0
        down_seconds = 0.0
        for n in range(WRITES):
            if n == DOWN_AT:
                redis_server.stop()
                went_down = time.monotonic()
            if n == BACK_AT:
                down_seconds = time.monotonic() - went_down
                redis_server.start()
            try:
                entry = services.add_entry(
                    thread_ids[n % THREADS], role="user", content=f"turn number {n}"
                )
            except Exception:
                refused += 1
                continue
            written.append(entry.pk)
        # then every write was taken
        assert refused == 0
        assert len(written) == WRITES
        # and once Redis is back, the worker does every job the sweeper sends again
        wait_until(worker, all_done(thread_ids), "every vector and extraction done")
    # no write lost, no vector missing or doubled
    assert Entry.objects.filter(pk__in=written).count() == WRITES
    vectors = list(
        Embedding.objects.filter(source_id__in=written).values_list("source_id", flat=True)
    )
    assert sorted(vectors) == sorted(written)
    # every thread's extraction ran to the end of the thread
    runs = ExtractionRun.objects.filter(thread_id__in=thread_ids)
    assert set(runs.values_list("status", flat=True)) == {RunStatus.DONE}
    assert set(runs.values_list("thread_id", flat=True)) == set(thread_ids)
    print(
        f"Redis down for {DOWN_AT}..{BACK_AT} of {WRITES} writes ({down_seconds:.1f} s): "
        f"{WRITES - refused} of {WRITES} writes taken, {len(set(vectors))} of {WRITES} "
        f"vectors, {runs.count()} extraction runs done"
    )
