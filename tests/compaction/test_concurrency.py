"""Racing compactions on PostgreSQL: Python threads, each with its own connection, compact
one thread at once; one compaction entry is written."""

from __future__ import annotations

import threading
from unittest import mock

import pytest

from cogitator_memory.compaction.config import CompactionConfig
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.compaction.runs import request_compaction
from cogitator_memory.compaction.services import CompactionService
from cogitator_memory.exceptions import CompactionStale
from cogitator_memory.llm.scripted import ScriptedAnswer, ScriptedModel
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry
from tests.threads.test_concurrency import race

pytestmark = [pytest.mark.postgres_only, pytest.mark.django_db(transaction=True)]


def test_concurrent_compactions_write_one_entry() -> None:
    # given a thread past its threshold
    thread = services.create_thread("concierge", thread_id="raced-compaction")
    for number in range(12):
        services.add_entry(thread.pk, role="user", content=f"message {number}", token_count=5)
    model = ScriptedModel([ScriptedAnswer("Summary.", match=lambda _call: True, repeat=True)])
    config = CompactionConfig(message_threshold=6, keep_recent=2)
    outcomes: list[str] = []
    lock = threading.Lock()

    def compact(_number: int) -> None:
        try:
            entry = CompactionService(model).compact(thread.pk, config)
            outcome = "written" if entry is not None else "nothing"
        except CompactionStale:
            outcome = "stale"
        with lock:
            outcomes.append(outcome)

    # when eight compact at once
    race(compact)
    # then one entry was written, and the others were refused or found nothing to do
    assert Entry.objects.filter(type="compaction").count() == 1
    assert outcomes.count("written") == 1
    assert len(outcomes) == 8


def test_concurrent_requests_open_one_run() -> None:
    thread = services.create_thread("concierge", thread_id="raced-requests")
    created: list[bool] = []
    lock = threading.Lock()

    def ask(_number: int) -> None:
        _run, was_created = request_compaction(thread.pk)
        with lock:
            created.append(was_created)

    # (the runs are not published, so they stay queued while the others ask)
    with (
        mock.patch("cogitator_memory.jobs.publish_on_commit"),
        mock.patch("cogitator_memory.compaction.runs.require_summarizer"),
    ):
        race(ask)
    assert created.count(True) == 1
    assert CompactionRun.objects.filter(thread=thread).count() == 1
