"""The seam through which capabilities send work to the tasks layer."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from cogitator_memory import background
from cogitator_memory.background import Work, offer, task_for
from cogitator_memory.tasks.compaction import compact_thread
from cogitator_memory.tasks.context import note_retrieved_task
from cogitator_memory.tasks.extraction import extract_thread_task


def test_every_kind_of_work_has_the_task_the_tasks_layer_offers() -> None:
    # given the app is ready (the tasks modules were imported)
    # then each kind of work is done by its task
    assert task_for(Work.EXTRACT_THREAD) is extract_thread_task
    assert task_for(Work.COMPACT_THREAD) is compact_thread
    assert task_for(Work.NOTE_RETRIEVED) is note_retrieved_task


def test_work_no_task_was_offered_for_is_refused_with_what_to_do(monkeypatch) -> None:
    # given no task is offered for extraction
    monkeypatch.setattr(background, "_offered", {})
    # when a capability asks for it, then the error says how to fix the set-up
    with pytest.raises(ImproperlyConfigured, match="INSTALLED_APPS"):
        task_for(Work.EXTRACT_THREAD)


def test_offering_again_replaces_the_task(monkeypatch) -> None:
    monkeypatch.setattr(background, "_offered", dict(background._offered))
    replacement = object()
    offer(Work.COMPACT_THREAD, replacement)
    assert task_for(Work.COMPACT_THREAD) is replacement
