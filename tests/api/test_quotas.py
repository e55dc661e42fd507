"""Quotas of model runs (``COGITATOR_MEMORY["QUOTAS"]``): extraction and compaction runs the
API opens are counted per agent and per user of an agent within ``PERIOD``, from the runs'
rows; over a quota the answer is 429 ``quota_exceeded`` with ``Retry-After`` and nothing
is opened. A request that joins a thread's open run costs nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.items.models import ExtractionRun, RunStatus
from cogitator_memory.threads.models import Thread
from tests.api.conftest import API, assert_error, write_conversation

if TYPE_CHECKING:
    from pytest_django.fixtures import SettingsWrapper

pytestmark = pytest.mark.django_db

PERIOD = 3600


def use_quotas(settings: SettingsWrapper, tmp_path: Path, **quotas: Any) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"text": "[]", "repeat": True}]))
    settings.COGITATOR_MEMORY = {
        "LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)},
        "QUOTAS": {"PERIOD": PERIOD, **quotas},
    }


def thread_of(user_id: str, agent_id: str = "agent-a") -> str:
    return write_conversation(agent_id, {"userId": user_id}).thread_id


def extract(client: APIClient, thread_id: str) -> Any:
    return client.post(f"{API}/threads/{thread_id}/extract/")


def compact(client: APIClient, thread_id: str) -> Any:
    return client.post(f"{API}/threads/{thread_id}/compact/")


def finish_runs() -> None:
    """Close the open runs, as their tasks would (the test's transaction never commits,
    so eager Celery never runs them)."""
    for model in (ExtractionRun, CompactionRun):
        model.objects.update(status=RunStatus.DONE, finished_at=timezone.now())


def test_the_agents_quota_counts_extraction_and_compaction_runs_together(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path
) -> None:
    # given a quota of three runs per agent
    use_quotas(settings, tmp_path, MODEL_RUNS_PER_AGENT=3)
    threads = [thread_of(f"u{n}") for n in range(3)]
    # when
    answers = [
        extract(client, threads[0]),
        compact(client, threads[1]),
        extract(client, threads[2]),
        compact(client, threads[2]),
    ]
    # then
    assert [a.status_code for a in answers[:3]] == [202, 202, 202]
    body = assert_error(answers[3], 429, "quota_exceeded")
    assert "agent's quota of model runs (3 per 3600 seconds)" in body["message"]
    retry_after = int(answers[3]["Retry-After"])
    assert PERIOD - 60 <= retry_after <= PERIOD
    assert ExtractionRun.objects.count() + CompactionRun.objects.count() == 3


def test_finished_runs_count_until_they_leave_the_period(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path
) -> None:
    # given two finished runs, one of them older than the period
    use_quotas(settings, tmp_path, MODEL_RUNS_PER_AGENT=2)
    thread_id = thread_of("u1")
    assert extract(client, thread_id).status_code == 202
    finish_runs()
    assert extract(client, thread_id).status_code == 202
    finish_runs()
    # when
    refused = extract(client, thread_id)
    ExtractionRun.objects.filter(pk=ExtractionRun.objects.earliest("created_at").pk).update(
        created_at=timezone.now() - timedelta(seconds=PERIOD + 1)
    )
    accepted = extract(client, thread_id)
    # then
    assert_error(refused, 429, "quota_exceeded")
    assert accepted.status_code == 202


def test_the_retry_after_is_when_the_oldest_run_leaves_the_period(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path
) -> None:
    # given a quota filled by a run of 50 minutes ago
    use_quotas(settings, tmp_path, MODEL_RUNS_PER_AGENT=1)
    thread_id = thread_of("u1")
    assert extract(client, thread_id).status_code == 202
    finish_runs()
    ExtractionRun.objects.update(created_at=timezone.now() - timedelta(minutes=50))
    # when
    response = extract(client, thread_id)
    # then: about ten minutes
    assert_error(response, 429, "quota_exceeded")
    assert 540 <= int(response["Retry-After"]) <= 600


def test_joining_the_open_run_costs_nothing_even_with_the_quota_used_up(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path
) -> None:
    # given a quota of one run, used by the run open on the thread
    use_quotas(settings, tmp_path, MODEL_RUNS_PER_AGENT=1)
    thread_id = thread_of("u1")
    first = extract(client, thread_id)
    # when
    again = [extract(client, thread_id) for _ in range(3)]
    # then
    assert {a.status_code for a in again} == {202}
    assert {a.json()["id"] for a in again} == {first.json()["id"]}
    assert ExtractionRun.objects.count() == 1


def test_the_users_quota_is_per_user_of_the_agent(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path
) -> None:
    # given a quota of one run per user
    use_quotas(settings, tmp_path, MODEL_RUNS_PER_USER=1)
    u1_first, u1_second, u2 = thread_of("u1"), thread_of("u1"), thread_of("u2")
    # when
    answers = [extract(client, u1_first), extract(client, u1_second), extract(client, u2)]
    # then
    assert answers[0].status_code == 202
    body = assert_error(answers[1], 429, "quota_exceeded")
    assert "user's quota" in body["message"]
    assert answers[2].status_code == 202


def test_the_quota_of_one_agent_leaves_another_agent_alone(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path, make_user: Any
) -> None:
    # given agent-a's quota used up
    use_quotas(settings, tmp_path, MODEL_RUNS_PER_AGENT=1)
    assert extract(client, thread_of("u1")).status_code == 202
    make_user("bo", {"agent-c": None})
    bo = APIClient()
    bo.login(username="bo", password="correct horse battery staple")
    # when
    response = extract(bo, thread_of("u1", agent_id="agent-c"))
    # then
    assert response.status_code == 202


def test_a_thread_the_caller_cannot_see_is_a_404_not_a_quota(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path
) -> None:
    # given agent-a's quota used up, and a thread of an agent the caller has no grant for
    use_quotas(settings, tmp_path, MODEL_RUNS_PER_AGENT=1)
    assert extract(client, thread_of("u1")).status_code == 202
    hidden = thread_of("u1", agent_id="agent-b")
    # when
    response = extract(client, hidden)
    # then
    assert_error(response, 404, "thread_not_found")


def test_without_quotas_nothing_is_counted(
    client: APIClient, settings: SettingsWrapper, tmp_path: Path
) -> None:
    # given the defaults: no quota
    use_quotas(settings, tmp_path)
    threads = [thread_of(f"u{n}") for n in range(4)]
    # when
    answers = [extract(client, thread_id).status_code for thread_id in threads]
    # then
    assert answers == [202] * 4
    assert Thread.objects.count() == 4
