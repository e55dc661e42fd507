"""The broker and worker checks: a broker that refuses or hangs makes /health/ready answer
503 within its bound and name the broker, /health/live staying 200; a real worker of the
project, on the local Redis, is seen; a broker without workers is not ready."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from cogitator_memory.health.report import DEFAULT_TIMEOUT, health_check
from tests.health.project import ask_project, by_name, closed_port, stalled_port
from tests.tasks.workers import (
    BROKER_URL,
    WAIT_SECONDS,
    Worker,
    remove_queue_keys,
    running_worker,
    sending_to,
    worker_database_url,
)

pytestmark = pytest.mark.django_db

# What a report may take beyond its bound: the interpreter's own pace on a busy machine.
SLACK_SECONDS = 1.0


@pytest.fixture
def redis_broker() -> Iterator[redis.Redis]:
    broker = redis.Redis.from_url(BROKER_URL, socket_timeout=2)
    try:
        broker.ping()
    except redis.RedisError as error:
        pytest.fail(
            f"Redis does not answer on 127.0.0.1:6379 ({error}); start it with "
            "scripts/ensure-redis.sh (as root) or: redis-server --daemonize yes --port 6379"
        )
    try:
        yield broker
    finally:
        broker.close()


def celery_app(broker: str, **conf: object) -> Celery:
    app = Celery(f"health-{uuid.uuid4().hex}", broker=broker, set_as_current=False)
    app.conf.update(task_always_eager=False, **conf)
    return app


def test_a_refused_broker_url_makes_ready_503_within_the_bound_and_names_it() -> None:
    # given: CELERY_BROKER_URL at a loopback port nothing listens on
    port = closed_port()
    # when
    answer = ask_project(
        CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0", DATABASE_URL=worker_database_url()
    )
    # then
    assert answer["ready"] == 503
    assert answer["seconds"] < DEFAULT_TIMEOUT + SLACK_SECONDS
    checks = by_name(answer["report"])
    assert checks["broker"]["status"] == "fail"
    assert checks["broker"]["reason"].startswith(
        f"the broker redis://127.0.0.1:{port}/0 did not answer:"
    )
    assert checks["worker"]["status"] == "fail"
    assert checks["worker"]["reason"].startswith("no worker can be seen: the broker")
    assert checks["database"]["status"] == "pass"
    assert answer["live"] == 200


def test_a_hanging_broker_fails_within_the_bound() -> None:
    # given: a server that accepts connections and never answers
    with stalled_port() as port:
        app = celery_app(f"redis://127.0.0.1:{port}/0")
        # when
        started = time.monotonic()
        result = health_check(app=app)
        elapsed = time.monotonic() - started
    # then
    assert elapsed < DEFAULT_TIMEOUT + SLACK_SECONDS
    assert not result.ready
    assert result.check("broker").status == "fail"
    assert f"127.0.0.1:{port}" in result.check("broker").reason
    assert "Timeout" in result.check("broker").reason
    assert result.check("worker").status == "fail"


def test_a_broker_password_is_not_shown() -> None:
    # given
    app = celery_app(f"redis://:s3cret-pass@127.0.0.1:{closed_port()}/0")
    # when
    result = health_check(app=app)
    # then
    assert "s3cret-pass" not in str(result.as_dict())
    assert "redis://:**@127.0.0.1:" in result.check("broker").reason


def test_a_broker_no_worker_listens_on_is_not_ready(redis_broker: redis.Redis) -> None:
    # given: Redis answers; no worker reads this app's control exchange
    exchange = f"health-{uuid.uuid4().hex}"
    app = celery_app(BROKER_URL, control_exchange=exchange)
    try:
        # when
        started = time.monotonic()
        result = health_check(app=app)
        elapsed = time.monotonic() - started
    finally:
        remove_queue_keys(redis_broker, exchange)
        app.close()
    # then
    assert elapsed < DEFAULT_TIMEOUT + SLACK_SECONDS
    assert result.check("broker").status == "pass"
    assert result.check("broker").reason == f"the broker {BROKER_URL} answered PING"
    assert result.check("worker").status == "fail"
    assert result.check("worker").reason.startswith(
        f"no worker answered a ping through {BROKER_URL} within"
    )
    assert not result.ready


@pytest.fixture(scope="module")
def health_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    folder: Path = tmp_path_factory.mktemp("health-worker")
    with running_worker(folder, "health", {}) as worker:
        yield worker


def test_a_running_worker_is_seen_and_the_deployment_is_ready(
    health_worker: Worker, redis_broker: redis.Redis
) -> None:
    # given: this process sends tasks through Redis (the current Celery app), as web does
    ours = health_worker.queue  # its hostname: the queue, a suffix of its own, @host
    with sending_to(health_worker):
        # when: asked until this worker, starting meanwhile, is the one that answers first
        # (workers of tests running beside this one may answer on the same Redis too)
        deadline = time.monotonic() + WAIT_SECONDS
        result = health_check()
        while not result.check("worker").reason.startswith(ours):
            if time.monotonic() > deadline:
                pytest.fail(
                    f"After {WAIT_SECONDS} s the worker is not seen: {result.as_dict()}; "
                    f"its log:\n{health_worker.log()}"
                )
            time.sleep(0.1)
            result = health_check()
    # then
    assert result.ready, result.as_dict()
    assert result.check("worker").status == "pass"
    assert result.check("worker").reason.endswith("answered a ping")
    assert result.check("broker").reason == f"the broker {BROKER_URL} answered PING"
    assert result.check("worker").seconds < DEFAULT_TIMEOUT
