"""``compact_thread`` and the trigger after new entries, run eagerly, on both databases."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.compaction.runs import request_compaction
from cogitator_memory.jobs import claim
from cogitator_memory.llm import registry
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.tasks.compaction import compact_thread
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model(settings: Any, tmp_path: Path) -> ScriptedModel:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"text": "Summary.", "repeat": True}]))
    settings.COGITATOR_MEMORY = {
        "LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)},
        "COMPACTION": {
            "ENABLED": True,
            "THRESHOLD": None,
            "MESSAGE_THRESHOLD": 6,
            "KEEP_RECENT": 2,
        },
    }
    scripted = registry.get_summarizer()
    assert isinstance(scripted, ScriptedModel)
    return scripted


DISABLED = {"ENABLED": False, "THRESHOLD": None, "MESSAGE_THRESHOLD": 2, "KEEP_RECENT": 2}


def add(thread_id: str, count: int) -> None:
    for number in range(count):
        services.add_entry(thread_id, role="user", content=f"message {number}", token_count=5)


def test_crossing_the_threshold_compacts_once_and_records_the_run(model: ScriptedModel) -> None:
    thread = services.create_thread("concierge", thread_id="busy")
    # when entries cross the threshold of six, and more come after
    add(thread.pk, 8)
    # then one compaction was written when the sixth came, and the run says so
    [compaction] = Entry.objects.filter(type="compaction")
    [run] = CompactionRun.objects.all()
    assert (run.status, run.compaction_entry_id, run.forced) == ("done", compaction.pk, False)
    assert len(model.calls) == 1


def test_below_the_threshold_or_disabled_nothing_runs(model: ScriptedModel, settings: Any) -> None:
    thread = services.create_thread("concierge", thread_id="quiet")
    add(thread.pk, 5)
    settings.COGITATOR_MEMORY = {**settings.COGITATOR_MEMORY, "COMPACTION": DISABLED}
    add(thread.pk, 5)
    assert not CompactionRun.objects.exists()
    assert model.calls == []


def test_a_redelivered_task_does_nothing(model: ScriptedModel, settings: Any) -> None:
    settings.COGITATOR_MEMORY = {**settings.COGITATOR_MEMORY, "COMPACTION": DISABLED}
    thread = services.create_thread("concierge", thread_id="again")
    add(thread.pk, 4)
    run, created = request_compaction(thread.pk)
    assert created
    run.refresh_from_db()
    assert run.status == "done" and run.compaction_entry_id
    # when the same task is delivered again
    result = compact_thread.apply(args=(thread.pk,), kwargs={"run_id": run.pk}).get()
    # then nothing more was written
    assert result == {"compaction_entry_id": None}
    assert Entry.objects.filter(type="compaction").count() == 1
    # and a run without a record finds the thread below its threshold
    assert compact_thread.apply(args=(thread.pk,)).get() == {"compaction_entry_id": None}


def test_a_request_while_one_runs_queues_the_next_which_later_requests_join(
    model: ScriptedModel, settings: Any
) -> None:
    settings.COGITATOR_MEMORY = {**settings.COGITATOR_MEMORY, "COMPACTION": DISABLED}
    thread = services.create_thread("concierge", thread_id="joined")
    running = CompactionRun.objects.create(
        thread=thread, status="running", lease_until=timezone.now() + timedelta(hours=1)
    )
    queued, created = request_compaction(thread.pk)
    assert created and queued.pk != running.pk and queued.status == "queued"
    joined, created = request_compaction(thread.pk)
    assert (joined.pk, created) == (queued.pk, False)
    # and its claim waits for the running one
    assert claim(CompactionRun, queued.pk) is None
    queued.refresh_from_db()
    assert queued.status == "queued" and queued.attempts == 0
