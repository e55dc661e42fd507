"""A real Celery worker of the project for the tests that claim tasks run.

``running_worker`` starts ``celery -A project worker --pool=solo`` in a subprocess, told its
database by ``DATABASE_URL`` (the test database: the SQLite file of this process, or the
test database on the embedded PostgreSQL) and its settings by environment variables read
in ``project/settings.py``; it reads a queue of its own on Redis database 14, so runs side
by side never take each other's tasks. ``sending_to`` makes this process send tasks to
that queue instead of running them eagerly.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
import redis
from celery import Celery
from django.conf import settings as django_settings
from django.db import connection

from project.celery import app as project_celery_app

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
    """A running worker, where it reads its tasks, and its process."""

    def __init__(
        self,
        queue: str,
        log_path: Path,
        process: subprocess.Popen[bytes] | None = None,
        broker_url: str = BROKER_URL,
    ) -> None:
        self.queue = queue
        self.log_path = log_path
        self.process = process
        self.broker_url = broker_url

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


def redis_texts(url: str = BROKER_URL) -> dict[str, str]:
    """Every key of the Redis database at ``url`` and what it holds, as text (strings,
    lists, hashes, sets and sorted sets; values that are not text are read as latin-1)."""
    client = redis.Redis.from_url(url, socket_timeout=2)
    texts: dict[str, str] = {}
    try:
        for key in client.scan_iter(count=1000):
            kind = client.type(key).decode()
            if kind == "string":
                parts = [client.get(key) or b""]
            elif kind == "list":
                parts = list(client.lrange(key, 0, -1))
            elif kind == "hash":
                parts = [b for pair in client.hgetall(key).items() for b in pair]
            elif kind == "set":
                parts = list(client.smembers(key))
            elif kind == "zset":
                parts = list(client.zrange(key, 0, -1))
            else:
                parts = []
            texts[key.decode("latin-1")] = " ".join(part.decode("latin-1") for part in parts)
    finally:
        client.close()
    return texts


@contextmanager
def running_worker(
    folder: Path,
    name: str,
    settings: Mapping[str, str],
    *,
    queue: str | None = None,
    broker_url: str = BROKER_URL,
    include: Sequence[str] = (),
    keep_queue: bool = False,
    processes: int = 0,
) -> Iterator[Worker]:
    """A worker of the project with ``settings`` (environment variables) on a queue named
    after ``name`` (or on ``queue``: a worker started again after another was killed),
    reading ``broker_url``, with the modules of ``include`` imported; its log in
    ``folder``; with ``processes``, a prefork pool of that many processes (as deployed)
    instead of one process. Stopped, and its queue removed (unless ``keep_queue``),
    afterwards."""
    broker = redis.Redis.from_url(broker_url, socket_timeout=2)
    try:
        broker.ping()
    except redis.RedisError as error:
        pytest.fail(
            f"Redis does not answer at {broker_url} ({error}); start it with "
            "scripts/ensure-redis.sh (as root) or: redis-server --daemonize yes --port 6379"
        )
    queue = queue or f"{name}-{uuid.uuid4().hex}"
    log_path = folder / f"worker-{uuid.uuid4().hex[:8]}.log"
    env = {key: value for key, value in os.environ.items() if key not in PROJECT_VARIABLES}
    env.update(
        DJANGO_SETTINGS_MODULE="project.settings",
        CELERY_BROKER_URL=broker_url,
        DATABASE_URL=worker_database_url(),
        **settings,
    )
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "project",
        "worker",
        *(["--pool=solo"] if not processes else ["--pool=prefork", f"--concurrency={processes}"]),
        # No cluster chatter: mingle alone waits a second for peers at start-up.
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
        "--loglevel=INFO",
        "--queues",
        queue,
        "--hostname",
        f"{queue}-{uuid.uuid4().hex[:6]}@%h",
        *[f"--include={module}" for module in include],
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
        yield Worker(queue, log_path, process, broker_url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if not keep_queue:
            # A broker the test stopped has nothing left to remove.
            with contextlib.suppress(redis.RedisError):
                remove_queue_keys(broker, queue)
        broker.close()


@contextmanager
def sending_to(worker: Worker) -> Iterator[Worker]:
    """Tasks of this process go through Redis to the worker's queue, not eagerly."""
    sender = Celery(f"sender-{worker.queue}", broker=worker.broker_url, set_as_current=False)
    sender.conf.update(
        task_always_eager=False,
        task_default_queue=worker.queue,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        # As the project sends: a broker that does not answer is given up on quickly.
        broker_connection_timeout=django_settings.CELERY_BROKER_CONNECTION_TIMEOUT,
        broker_transport_options=django_settings.CELERY_BROKER_TRANSPORT_OPTIONS,
        task_publish_retry=django_settings.CELERY_TASK_PUBLISH_RETRY,
        task_publish_retry_policy=django_settings.CELERY_TASK_PUBLISH_RETRY_POLICY,
    )
    # The tasks are shared tasks: each use resolves them in the current app.
    sender.set_current()
    try:
        yield worker
    finally:
        project_celery_app.set_current()
        # Not force_close_all(): kombu shares the pool of a broker URL between apps.
        sender.close()


def wait_until(worker: Worker, condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(
                f"After {WAIT_SECONDS} s, still not: {what}. The worker's log:\n{worker.log()}"
            )
        time.sleep(POLL_SECONDS)
