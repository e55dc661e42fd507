"""Compaction through the API: 202 and a run to poll, and the compacted history (eager
Celery runs the task when the request commits)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from rest_framework.test import APIClient

from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.threads.models import Entry
from tests.api.conftest import API, Conversation, assert_error

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper

pytestmark = pytest.mark.django_db


@pytest.fixture
def model(settings: SettingsWrapper, tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"text": "They spoke of a parcel.", "repeat": True}]))
    settings.COGITATOR_MEMORY = {
        "LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)},
        "COMPACTION": {"KEEP_RECENT": 1},
    }


def compact(client: APIClient, thread_id: str) -> Any:
    return client.post(f"{API}/threads/{thread_id}/compact/")


def test_without_a_model_the_request_is_a_409(
    client: APIClient, conversation: Conversation, settings: SettingsWrapper
) -> None:
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": None}}
    body = assert_error(compact(client, conversation.thread.pk), 409, "llm_unavailable")
    assert "Compaction is off" in body["message"]
    assert not CompactionRun.objects.exists()


def test_a_compaction_is_accepted_runs_and_is_read_back(
    client: APIClient,
    conversation: Conversation,
    model: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # when
    with django_capture_on_commit_callbacks(execute=True):
        response = compact(client, conversation.thread.pk)
    # then 202, and the run to poll says what it wrote
    assert response.status_code == 202, response.json()
    run = client.get(response["Location"]).json()
    assert run["status"] == "done", run
    assert run["forced"] is True
    compaction = Entry.objects.get(pk=run["compaction_entry_id"])
    assert compaction.event["summary"] == "They spoke of a parcel."
    # and the compacted history starts with it, then the kept entry
    history = client.get(f"{API}/threads/{conversation.thread.pk}/compacted-history/")
    assert history.status_code == 200
    results = history.json()["results"]
    assert [entry["id"] for entry in results] == [compaction.pk, conversation.follow_up.pk]
    assert results[0]["type"] == "compaction"
    # and the path still holds every entry
    path = client.get(f"{API}/threads/{conversation.thread.pk}/path/").json()["results"]
    assert [entry["id"] for entry in path] == [
        conversation.root.pk,
        conversation.reply.pk,
        conversation.follow_up.pk,
    ]


def test_compacted_history_of_another_branch_and_of_an_uncompacted_thread(
    client: APIClient, conversation: Conversation
) -> None:
    url = f"{API}/threads/{conversation.thread.pk}/compacted-history/"
    results = client.get(url, {"leaf_id": conversation.retry.pk}).json()["results"]
    assert [entry["id"] for entry in results] == [conversation.root.pk, conversation.retry.pk]
    assert_error(client.get(url, {"leaf_id": "nope"}), 404, "entry_not_in_thread", ["leaf_id"])


def test_someone_elses_thread_and_run_are_not_found(
    client: APIClient, foreign_conversation: Conversation, model: None
) -> None:
    thread_id = foreign_conversation.thread.pk
    assert_error(compact(client, thread_id), 404, "thread_not_found")
    url = f"{API}/threads/{thread_id}/compacted-history/"
    assert_error(client.get(url), 404, "thread_not_found")
    run = CompactionRun.objects.create(thread=foreign_conversation.thread)
    assert_error(client.get(f"{API}/compactions/{run.pk}/"), 404, "compaction_run_not_found")
