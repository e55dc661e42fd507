"""Extracting a thread's items: each window once, in the thread's scope, from the task,
the trigger after new entries and the management command."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command

from cogitator_memory.exceptions import LLMUnavailable
from cogitator_memory.items.models import Evidence, ExtractionWindow, MemoryItem
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.llm.registry import get_summarizer
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.tasks.extraction import extract_thread_task
from cogitator_memory.threads import services as threads

pytestmark = pytest.mark.django_db

SAID_AT = datetime(2026, 3, 4, 15, 20, tzinfo=UTC)
LISBON = [
    {
        "kind": "fact",
        "subject": "Ana",
        "attribute": "home city",
        "value": "Lisbon",
        "confidence": 0.9,
        "when": "yesterday",
        "quotes": [{"message": 1, "text": "I moved to Lisbon"}],
    }
]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def thread():
    thread = threads.create_thread("concierge", {"userId": "ana", "timeZone": "Europe/Lisbon"})
    threads.add_entry(
        thread.pk, role="user", content="I moved to Lisbon yesterday.", created_at=SAID_AT
    )
    threads.add_entry(thread.pk, role="assistant", content="Welcome to Lisbon!")
    return thread


def test_the_items_go_into_the_threads_scope_and_each_window_is_read_once(thread) -> None:
    model = ScriptedModel([json.dumps(LISBON)])
    first = extract_thread(thread.pk, summarize=model)
    assert (first.windows, first.skipped, first.calls, first.items) == (1, 0, 1, 1)
    item = MemoryItem.objects.get()
    assert (item.agent_id, item.user_id, item.status) == ("concierge", "ana", "suggested")
    # the thread's zone read "yesterday": 3 March in Lisbon (UTC+0 in winter)
    assert item.valid_from == datetime(2026, 3, 3, tzinfo=UTC)
    # when run again, nothing is read again
    again = extract_thread(thread.pk, summarize=ScriptedModel([]))
    assert (again.windows, again.skipped, again.calls) == (0, 1, 0)
    [window] = ExtractionWindow.objects.all()
    assert (window.entries, window.items_written, window.calls) == (2, 1, 1)


def test_a_later_run_reads_only_the_entries_after_the_last_window(thread) -> None:
    extract_thread(thread.pk, summarize=ScriptedModel([json.dumps(LISBON)]))
    threads.add_entry(thread.pk, role="user", content="Book me an aisle seat.")
    model = ScriptedModel(["[]"])
    done = extract_thread(thread.pk, summarize=model)
    assert (done.windows, done.calls) == (1, 1)
    assert "aisle seat" in model.calls[0].text
    assert "moved to Lisbon" not in model.calls[0].text


def test_a_redelivered_task_adds_nothing(thread, settings, tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps({"answers": [{"text": json.dumps(LISBON), "repeat": True}]}))
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)}}
    first = extract_thread_task.apply(args=[thread.pk]).get()
    second = extract_thread_task.apply(args=[thread.pk]).get()
    assert first["items"] == 1 and second == {"windows": 0, "skipped": 1, "calls": 0, "items": 0}
    assert MemoryItem.objects.count() == 1
    assert Evidence.objects.count() == 1


def test_without_a_model_extraction_says_it_is_off(thread, settings) -> None:
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": None}}
    assert get_summarizer() is None
    with pytest.raises(LLMUnavailable) as off:
        extract_thread(thread.pk)
    assert off.value.message.startswith("Extraction of memory items is off")


def test_new_entries_schedule_one_extraction_when_enabled(
    settings, tmp_path: Path, django_capture_on_commit_callbacks
) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"text": json.dumps(LISBON), "repeat": True}]))
    settings.COGITATOR_MEMORY = {
        "LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)},
        "EXTRACTION": {"ENABLED": True, "DEBOUNCE_SECONDS": 0},
    }
    thread = threads.create_thread("concierge", {"userId": "ana"})
    # when an entry is added (eager Celery runs the task as soon as it is sent)
    with django_capture_on_commit_callbacks(execute=True):
        threads.add_entry(thread.pk, role="user", content="I moved to Lisbon yesterday.")
    # then the thread was read and its item written
    assert ExtractionWindow.objects.filter(thread_id=thread.pk).count() == 1
    assert MemoryItem.objects.get().value == "Lisbon"


def test_new_entries_schedule_nothing_when_extraction_is_off(
    thread, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        threads.add_entry(thread.pk, role="user", content="I moved to Lisbon yesterday.")
    assert not ExtractionWindow.objects.exists()


def test_the_command_extracts_with_a_progress_bar(thread, settings, tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([json.dumps(LISBON)]))
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted", "SCRIPT": str(script)}}
    out = io.StringIO()
    call_command("extract_items", "--thread", thread.pk, stdout=out)
    assert "Extracted 1 threads: 1 windows read, 1 model calls, 1 items written." in out.getvalue()
    assert "1/1" in out.getvalue()
    with pytest.raises(CommandError, match="Thread not found"):
        call_command("extract_items", "--thread", "nope", stdout=io.StringIO())
