"""The report's shape, and the work a cascade leaves for after its commit: a new compaction,
``VACUUM`` on PostgreSQL, dropping cached keyword corpora."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from cogitator_memory.cascade import traces
from cogitator_memory.cascade.report import CascadeReport
from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.dependents import Forgotten
from cogitator_memory.llm import registry
from cogitator_memory.tasks.maintenance import vacuum_tables
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry


def test_the_report_has_every_field_of_the_spec_and_counts() -> None:
    report = CascadeReport()
    report.add_forgotten(
        Forgotten({"items.purged": 2, "items.trimmed": 1, "entities": 1, "vectors": 3, "x": 4})
    )
    report.entries.deleted.append("entry_1")
    report.note_thread_changed("chat")

    data = report.as_dict()

    assert data["entries"] == {"deleted": ["entry_1"], "redacted": []}
    assert data["items"] == {"purged": 2, "trimmed": 1, "stale": 0}
    assert data["facts"] == {"deleted": 0, "trimmed": 0}
    assert data["graph"] == {"nodes": 0, "edges": 0, "trimmed": 0}
    assert (data["playbook_rules"], data["file_versions"], data["entities"]) == (0, 0, 1)
    assert data["threads_changed"] == ["chat"] and data["other"] == {"x": 4}
    assert report.counts()["entries"] == {"deleted": 1, "redacted": 0}
    assert not report.is_empty()
    assert CascadeReport().is_empty()


@pytest.fixture
def compacting(settings: Any, tmp_path: Path) -> None:
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
    registry.get_summarizer()


@pytest.mark.django_db(transaction=True)
def test_a_thread_whose_summary_went_is_compacted_again(compacting: None) -> None:
    threads.create_thread("concierge", thread_id="busy")
    first = threads.add_entry("busy", role="user", content="message 0", token_count=5)
    for number in range(1, 7):
        threads.add_entry("busy", role="user", content=f"message {number}", token_count=5)
    [old] = Entry.objects.filter(thread_id="busy", type="compaction")

    report = MemoryCascade().delete_entries([first.pk])

    assert report.summaries == [old.pk]
    assert report.recompacting == ["busy"]
    [new] = Entry.objects.filter(thread_id="busy", type="compaction")
    assert new.pk != old.pk
    assert CompactionRun.objects.filter(thread_id="busy", compaction_entry_id=new.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_vacuum_runs_on_the_apps_tables_only_on_postgresql() -> None:
    done = vacuum_tables(["cogitator_memory_entry", "auth_user", "no_such_table"])
    if connection.vendor == "postgresql":
        assert done == {"vacuumed": ["cogitator_memory_entry"]}
    else:
        assert done == {"vacuumed": []}


@pytest.mark.django_db(transaction=True)
def test_forgetting_a_user_sends_a_vacuum_on_postgresql(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[list[str]] = []

    class Task:
        def delay(self, tables: list[str]) -> None:
            sent.append(tables)

    monkeypatch.setattr(traces.background, "task_for", lambda work: Task())
    threads.create_thread("concierge", {"userId": "ana"}, thread_id="chat")
    threads.add_entry("chat", role="user", content="hello")

    MemoryCascade().delete_user("ana")

    if connection.vendor == "postgresql":
        [tables] = sent
        assert {"cogitator_memory_entry", "cogitator_memory_thread"} <= set(tables)
    else:
        assert sent == []


@pytest.mark.django_db
def test_the_cached_corpora_of_touched_threads_are_dropped(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    dropped: list[list[int]] = []
    monkeypatch.setattr(traces, "forget_corpora", lambda ids: dropped.append(list(ids)))
    threads.create_thread("concierge", thread_id="chat")
    entry = threads.add_entry("chat", role="user", content="a keyword")
    corpora = traces.thread_corpora(["chat"])
    assert corpora

    with django_capture_on_commit_callbacks(execute=True):
        MemoryCascade().delete_entries([entry.pk])

    assert dropped == [corpora]
