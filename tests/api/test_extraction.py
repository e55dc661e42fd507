"""Extraction through the API: 202 and a run to poll, one open run per thread, and the
run's status as the task goes (eager Celery runs the task when the request commits)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from cogitator_memory.items.models import ExtractionRun, MemoryItem, RunStatus
from cogitator_memory.jobs import sweep
from cogitator_memory.tasks.extraction import extract_thread_task
from tests.api.conftest import API, Conversation, assert_error, token_client

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper

pytestmark = pytest.mark.django_db

ANSWER = [
    {
        "kind": "fact",
        "subject": "Parcel",
        "attribute": "whereabouts",
        "value": "left the depot",
        "confidence": 0.9,
        "quotes": [{"message": 2, "text": "It left the depot."}],
    }
]


def use_model(settings: SettingsWrapper, tmp_path: Path, answers: list[Any]) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps(answers))
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)}}


@pytest.fixture
def model(settings: SettingsWrapper, tmp_path: Path) -> None:
    use_model(settings, tmp_path, [{"text": json.dumps(ANSWER), "repeat": True}])


def extract(client: APIClient, conversation: Conversation) -> Any:
    return client.post(f"{API}/threads/{conversation.thread_id}/extract/")


def test_without_a_model_the_request_is_a_409_and_nothing_is_queued(
    client: APIClient, conversation: Conversation, settings: SettingsWrapper
) -> None:
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": None}}
    body = assert_error(extract(client, conversation), 409, "llm_unavailable")
    assert "Extraction of memory items is off" in body["message"]
    assert not ExtractionRun.objects.exists()


def test_a_request_is_accepted_with_the_run_to_poll(
    client: APIClient, conversation: Conversation, model: None
) -> None:
    # when (the task is not run: the test's transaction never commits)
    response = extract(client, conversation)
    # then
    assert response.status_code == 202
    run = response.json()
    assert run["status"] == "queued"
    assert run["thread_id"] == conversation.thread_id
    assert (run["windows_total"], run["started_at"], run["error"]) == (None, None, "")
    assert response["Location"].endswith(f"{API}/extractions/{run['id']}/")
    assert client.get(response["Location"]).json() == run


def test_a_second_request_joins_the_open_run(
    client: APIClient, conversation: Conversation, model: None
) -> None:
    first = extract(client, conversation).json()
    second = extract(client, conversation)
    assert second.status_code == 202
    assert second.json()["id"] == first["id"]
    assert ExtractionRun.objects.count() == 1


def test_the_run_reports_what_the_task_did(
    client: APIClient,
    conversation: Conversation,
    model: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # when the request commits, eager Celery runs the task
    with django_capture_on_commit_callbacks(execute=True):
        run_id = extract(client, conversation).json()["id"]
    # then
    run = client.get(f"{API}/extractions/{run_id}/").json()
    assert run["status"] == "done"
    assert (run["windows_done"], run["windows_total"], run["calls"]) == (1, 1, 1)
    assert (run["items_written"], run["attempts"], run["error"]) == (1, 1, "")
    assert run["started_at"] <= run["finished_at"]
    [item] = client.get(f"{API}/items/").json()["results"]
    assert (item["value"], item["status"], item["user_id"]) == ("left the depot", "suggested", "u1")
    # and a new request starts a new run, which finds nothing unread
    with django_capture_on_commit_callbacks(execute=True):
        again = extract(client, conversation).json()
    assert again["id"] != run_id
    done = client.get(f"{API}/extractions/{again['id']}/").json()
    assert (done["status"], done["windows_skipped"], done["items_written"]) == ("done", 1, 0)
    assert MemoryItem.objects.count() == 1


def test_a_failing_model_fails_an_eager_run_with_a_public_error(
    client: APIClient,
    conversation: Conversation,
    settings: SettingsWrapper,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # given a model with no answer at all
    use_model(settings, tmp_path, [])
    # when
    with django_capture_on_commit_callbacks(execute=True):
        run_id = extract(client, conversation).json()["id"]
    # then: run in this process, with no broker to try again through
    run = client.get(f"{API}/extractions/{run_id}/").json()
    assert run["status"] == "failed"
    assert run["attempts"] == 1
    assert run["error"] == "llm_script_exhausted: The model service failed; try again later."
    assert run["finished_at"] is not None
    assert not MemoryItem.objects.exists()


@pytest.fixture
def through_a_broker() -> Iterator[None]:
    """Tasks are sent to a queue, not run in this process."""
    conf = extract_thread_task.app.conf
    conf.task_always_eager = False
    try:
        yield
    finally:
        conf.task_always_eager = True


def test_a_queue_that_refuses_the_task_keeps_the_run_queued_for_the_sweeper(
    through_a_broker: None,
    client: APIClient,
    conversation: Conversation,
    model: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # given a broker that is down
    refused = mock.patch.object(
        extract_thread_task, "apply_async", side_effect=ConnectionError("broker down")
    )
    # when
    with refused, django_capture_on_commit_callbacks(execute=True):
        response = extract(client, conversation)
    # then the request is answered, and the run waits, not yet published
    assert response.status_code == 202
    run_id = response.json()["id"]
    run = ExtractionRun.objects.get(pk=run_id)
    assert (run.status, run.published_at) == (RunStatus.QUEUED, None)
    # and a second request joins it rather than queueing another
    assert extract(client, conversation).json()["id"] == run_id
    # when the broker is back, the sweeper publishes it
    with mock.patch.object(extract_thread_task, "apply_async") as sent:
        assert sweep() == {"extraction runs": 1}
    assert sent.call_args.kwargs["kwargs"] == {"run_id": run_id}
    assert ExtractionRun.objects.get(pk=run_id).published_at is not None
    # and a sweep soon after sends nothing again
    with mock.patch.object(extract_thread_task, "apply_async") as sent:
        assert sweep() == {}
    sent.assert_not_called()


def test_a_run_past_its_lease_is_taken_again_by_the_next_worker(
    through_a_broker: None, client: APIClient, conversation: Conversation, model: None
) -> None:
    # given a run whose worker went away while it ran
    with mock.patch.object(extract_thread_task, "apply_async"):
        lost = extract(client, conversation).json()["id"]
    ExtractionRun.objects.filter(pk=lost).update(
        status=RunStatus.RUNNING,
        attempts=1,
        lease_until=timezone.now() - timedelta(seconds=1),
    )
    # when the sweeper wakes a worker for it
    with mock.patch.object(extract_thread_task, "apply_async") as sent:
        assert sweep() == {"extraction runs": 1}
    extract_thread_task(*sent.call_args.kwargs["args"], **sent.call_args.kwargs["kwargs"])
    # then the run is done, on its second attempt
    run = client.get(f"{API}/extractions/{lost}/").json()
    assert (run["status"], run["attempts"], run["items_written"]) == ("done", 2, 1)


def test_a_run_whose_worker_is_lost_every_time_is_dead_after_its_attempts(
    through_a_broker: None, conversation: Conversation, model: None
) -> None:
    # given a run claimed three times, its worker lost each time
    run = ExtractionRun.objects.create(
        thread=conversation.thread,
        status=RunStatus.RUNNING,
        attempts=3,
        lease_until=timezone.now() - timedelta(seconds=1),
    )
    # when a worker gets its message again
    result = extract_thread_task(conversation.thread_id, run_id=run.pk)
    # then it does not run it: the run is dead, and says why
    run.refresh_from_db()
    assert result["windows"] == 0
    assert run.status == RunStatus.DEAD
    assert run.error == "Given up after 3 attempts. Its worker was lost while it ran."
    assert not MemoryItem.objects.exists()


def test_the_database_keeps_one_queued_and_one_running_run_per_thread(
    conversation: Conversation,
) -> None:
    ExtractionRun.objects.create(thread=conversation.thread)
    with pytest.raises(IntegrityError), transaction.atomic():
        ExtractionRun.objects.create(thread=conversation.thread)
    ExtractionRun.objects.create(thread=conversation.thread, status=RunStatus.RUNNING)
    with pytest.raises(IntegrityError), transaction.atomic():
        ExtractionRun.objects.create(thread=conversation.thread, status=RunStatus.RUNNING)
    ExtractionRun.objects.create(thread=conversation.thread, status=RunStatus.DONE)
    ExtractionRun.objects.create(thread=conversation.thread, status=RunStatus.DEAD)
    assert ExtractionRun.objects.count() == 4


def test_a_thread_of_a_user_outside_the_grant_is_a_404(
    make_user: Any, conversation: Conversation, model: None
) -> None:
    # given a principal granted agent-a for another user than the thread's
    other = token_client(make_user("u2-desk", {"agent-a": ["u2"]}))
    # when / then
    assert_error(extract(other, conversation), 404, "thread_not_found")
    assert not ExtractionRun.objects.exists()


def test_a_missing_run_is_a_404(client: APIClient) -> None:
    assert_error(client.get(f"{API}/extractions/extr_missing/"), 404, "extraction_run_not_found")
