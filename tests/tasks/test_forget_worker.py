"""End to end: forgetting a user asked for through the API runs on a real Celery worker of
the project, on the local Redis broker and the test's own database; the run reports its
progress (batches done of the total) and, once done, what went, counted; no result of the
task is kept in Redis (the run's row is the record)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from cogitator_memory.access.models import Grant
from cogitator_memory.threads.models import Thread
from tests.api.conftest import API, token_client
from tests.cascade.conftest import AGENT, build_world, canaries
from tests.tasks.workers import (
    Worker,
    redis_texts,
    running_worker,
    sending_to,
    wait_until,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def forget_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    folder = tmp_path_factory.mktemp("forget-worker")
    with running_worker(folder, "forget", {}) as running:
        yield running


@pytest.fixture
def sent_to_worker(forget_worker: Worker) -> Iterator[Worker]:
    with sending_to(forget_worker):
        yield forget_worker


def person() -> APIClient:
    user = User.objects.create_user("privacy-desk")
    user.user_permissions.add(Permission.objects.get(codename="forget_user_memory"))
    Grant.objects.create(user=user, agent_id=AGENT)
    return token_client(user)


def test_a_user_is_forgotten_on_the_worker_and_the_run_reports_progress(
    sent_to_worker: Worker,
) -> None:
    # given
    build_world()
    ana_threads = set(Thread.objects.filter(user_id="ana").values_list("pk", flat=True))
    client = person()
    # when
    accepted = client.post(f"{API}/users/ana/forget/", {"confirm": "ana"}, format="json")
    # then the run is queued, and the worker takes it to done
    assert accepted.status_code == 202, accepted.json()
    run_url = accepted["Location"]
    seen: list[tuple[str, int, int | None]] = []

    def status() -> dict[str, Any]:
        run = dict(client.get(run_url).json())
        seen.append((run["status"], run["done"], run["total"]))
        return run

    wait_until(sent_to_worker, lambda: status()["status"] in {"done", "failed"}, "the run ended")
    run = status()
    assert run["status"] == "done", run
    assert run["done"] == run["total"] > 1
    assert (run["attempts"], run["error"]) == (1, "")
    assert run["counts"]["threads"] == 4
    assert run["counts"]["items"]["purged"] == 2
    # the progress only went forward
    dones = [done for _status, done, _total in seen]
    assert dones == sorted(dones)
    # and ana is forgotten, bea is not
    assert not Thread.objects.filter(user_id="ana").exists()
    assert canaries("CANARYANA") == {}
    assert Thread.objects.filter(user_id="bea").exists()
    assert "forget_user_task" in sent_to_worker.log()
    assert Path(sent_to_worker.log_path).exists()

    # and nothing of ana is left in Redis either (broker messages, task results): no word
    # she wrote and no id of a thread of hers, in any key or value
    held = redis_texts()
    # The run's row is the record: no result backend keeps the task's result.
    assert not [
        key
        for key, text in held.items()
        if key.startswith("celery-task-meta-") and (run["id"] in key or run["id"] in text)
    ]
    found = {
        key: [word for word in ("CANARYANA", *ana_threads) if word in key or word in text]
        for key, text in held.items()
    }
    assert not {key: words for key, words in found.items() if words}
