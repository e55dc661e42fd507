"""``delete_thread`` and ``delete_user``: scopes, sessions, runs and their traces, grants,
progress."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry

from cogitator_memory.background import Work, task_for
from cogitator_memory.cascade.services import MemoryCascade
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.exceptions import EntryNotFound, NoGrant, ThreadNotFound
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import Entity, ExtractionRun, MemoryItem
from cogitator_memory.jobs import RunStatus
from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread
from tests.cascade.conftest import AGENT, World

pytestmark = pytest.mark.django_db

ONLY_BEA = Grants.for_agents([AGENT], {AGENT: ["bea"]})


# --- delete_thread -------------------------------------------------------------------------


def test_deleting_a_thread_takes_its_scope_sessions_and_runs(world: World) -> None:
    ana = world.users["ana"]
    session_thread = ana.session_thread

    report = MemoryCascade().delete_thread(ana.chat)

    assert not Thread.objects.filter(pk=ana.chat).exists()
    assert report.threads == [ana.chat]
    assert set(report.threads_changed) == {ana.fork, ana.fork2}
    assert report.runs == 2
    assert not CompactionRun.objects.filter(thread_id=ana.chat).exists()
    assert not ExtractionRun.objects.filter(thread_id=ana.chat).exists()
    # The items of the chat's own scope and of its entries went.
    assert not MemoryItem.objects.filter(pk__in=list(ana.items.values())).exists()
    # The chat's own file is redacted and deleted; so are the versions written at its
    # entries (the user's file and the agent's, both written at its first message), whose
    # files then leave the listings.
    versions = MemoryFileVersion.objects.filter(thread_id=ana.chat).order_by("sequence")
    assert [(v.content, v.redaction is not None) for v in versions] == [
        (REDACTED_TEXT, True),
        (None, False),
    ]
    assert MemoryFileHead.objects.get(thread_id=ana.chat).deleted is True
    assert report.files == 3 and report.file_versions == 3
    assert MemoryFileHead.objects.filter(user_id="ana", thread_id__isnull=True).count() == 1
    # The other threads of the user stay.
    assert Thread.objects.filter(pk=session_thread).exists()
    assert not LogEntry.objects.filter(object_id=ana.items["on_e1"]).exists()


def test_a_session_goes_with_its_thread(world: World) -> None:
    ana = world.users["ana"]

    report = MemoryCascade().delete_thread(ana.session_thread)

    assert report.sessions == 1
    assert not ChannelSession.objects.filter(user_id="ana").exists()


def test_a_missing_thread_is_not_found_unless_missing_ok() -> None:
    with pytest.raises(ThreadNotFound):
        MemoryCascade().delete_thread("nothing")
    assert MemoryCascade().delete_thread("nothing", missing_ok=True).is_empty()


def test_no_celery_result_of_a_deleted_threads_runs_is_kept(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    # The run's row is the record: its task keeps no result in a backend, so nothing of
    # what it said outlives the thread there.
    ana = world.users["ana"]
    task = task_for(Work.COMPACT_THREAD)
    assert task.ignore_result is True

    with django_capture_on_commit_callbacks(execute=True):
        report = MemoryCascade().delete_thread(ana.chat)

    assert report.task_results == 0
    assert not CompactionRun.objects.filter(thread_id=ana.chat).exists()


# --- delete_user ---------------------------------------------------------------------------


def test_forgetting_a_user_reports_progress_batch_by_batch(world: World) -> None:
    seen: list[tuple[int, int]] = []

    MemoryCascade().delete_user("ana", progress=lambda done, total: seen.append((done, total)))

    total = seen[0][1]
    # ana's four threads, the group, the scope of the one agent, the rest.
    assert total == 4 + 1 + 1 + 1
    assert seen == [(done, total) for done in range(total + 1)]


def test_forgetting_a_user_in_one_agent_leaves_the_others(world: World) -> None:
    threads.create_thread("other-agent", {"userId": "ana"}, thread_id="elsewhere")
    threads.add_entry("elsewhere", role="user", content="Kept.")
    MemoryFiles().run(
        FileAccess(scope=MemoryScope("other-agent", user_id="ana")),
        {"command": "create", "path": "/memories/kept.md", "file_text": "kept"},
    )

    report = MemoryCascade().delete_user("ana", agent_ids=[AGENT])

    assert Thread.objects.filter(pk="elsewhere").exists()
    assert MemoryFileVersion.objects.filter(agent_id="other-agent").exists()
    assert not MemoryFileVersion.objects.filter(agent_id=AGENT, user_id="ana").exists()
    assert not Entity.objects.filter(agent_id=AGENT, user_id="ana").exists()
    assert not Embedding.objects.filter(user_id="ana").exists()
    assert report.sessions == 1


def test_forgetting_a_user_of_every_agent_finds_every_agent(world: World) -> None:
    threads.create_thread("other-agent", {"userId": "ana"}, thread_id="elsewhere")

    report = MemoryCascade().delete_user("ana")

    assert "elsewhere" in report.threads
    assert not Thread.objects.filter(user_id="ana").exists()


def test_a_thread_of_another_the_grants_do_not_reach_is_counted_and_left(
    world: World,
) -> None:
    grants = Grants.for_agents([AGENT], {AGENT: ["ana"]})

    report = MemoryCascade(grants).delete_user("ana")

    assert report.threads_out_of_reach == 1
    assert Entry.objects.filter(pk=world.group_entries["ana"]).exists()
    assert not Thread.objects.filter(user_id="ana").exists()
    again = MemoryCascade(grants).delete_user("ana")
    assert again.is_empty() and again.threads_out_of_reach == 1


def test_stored_task_results_and_vacuum_are_skipped_without_a_backend_or_postgres(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = MemoryCascade().delete_user("ana")
    assert report.task_results == 0
    assert callbacks  # results, cached corpora, vacuum (on PostgreSQL) wait for the commit


# --- grants --------------------------------------------------------------------------------


def test_a_caller_reaches_only_what_its_grants_reach(world: World) -> None:
    ana = world.users["ana"]
    cascade = MemoryCascade(ONLY_BEA)

    with pytest.raises(EntryNotFound):
        cascade.delete_entries([ana.entries["e1"]])
    with pytest.raises(EntryNotFound):
        cascade.redact_entries([ana.entries["e1"]])
    with pytest.raises(ThreadNotFound):
        cascade.delete_thread(ana.chat)
    with pytest.raises(ThreadNotFound):
        cascade.rewind(ana.chat, ana.entries["e1"])
    with pytest.raises(NoGrant):
        cascade.delete_user("ana")
    with pytest.raises(NoGrant):
        cascade.delete_user("ana", agent_ids=[AGENT])
    with pytest.raises(NoGrant):
        MemoryCascade(Grants.for_agents(["elsewhere"])).delete_user("ana", agent_ids=[AGENT])
    # Missing and out of reach answer alike.
    assert cascade.delete_entries([ana.entries["e1"]], missing_ok=True).is_empty()
    assert Entry.objects.filter(pk=ana.entries["e1"]).exists()


def test_the_grants_reach_their_own_user(world: World) -> None:
    bea = world.users["bea"]

    report = MemoryCascade(ONLY_BEA).delete_user("bea")

    assert bea.chat in report.threads
    assert Thread.objects.filter(user_id="ana").count() == 4


def test_runs_open_and_done_go_with_their_thread(world: World) -> None:
    ana = world.users["ana"]
    ExtractionRun.objects.filter(thread_id=ana.chat).update(status=RunStatus.DONE)

    MemoryCascade().delete_thread(ana.chat)

    assert not ExtractionRun.objects.filter(thread_id=ana.chat).exists()
