"""Racing writers of one file, and changes of many files written whole or not at all.

The racing tests run Python threads, each with its own connection: on PostgreSQL they
race for real (the sequence constraint refuses the loser, who makes its change again); on
SQLite the IMMEDIATE transactions queue them, and the same counts must hold. One test
races writers in processes of their own (``tests/files/racers.py``), as the workers and
web processes of a deployment on one SQLite file race.
"""

from __future__ import annotations

import multiprocessing
import queue
import re
import threading
from typing import Any

import pytest
from django.db import IntegrityError

from cogitator_memory.exceptions import ConcurrentFileChange, FileVersionConflict
from cogitator_memory.files import store
from cogitator_memory.files.access import FileAccess, SeenVersions
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.services import TRIES, MemoryFiles
from cogitator_memory.grants import MemoryScope
from tests.files.racers import edit_counter
from tests.tasks.workers import worker_database_url
from tests.threads.test_concurrency import race

ANA = MemoryScope("concierge", user_id="ana")
WRITERS = 6
EDITS = 50
PROCESSES = 4
PROCESS_EDITS = 40


def assert_one_chain_of_versions(path: str) -> None:
    sequences = list(
        MemoryFileVersion.objects.filter(path=path)
        .order_by("sequence")
        .values_list("sequence", flat=True)
    )
    assert sequences == list(range(1, len(sequences) + 1))
    head = MemoryFileHead.objects.get(path=path)
    assert head.sequence == sequences[-1]


@pytest.mark.django_db(transaction=True)
def test_racing_editors_that_read_first_lose_no_update() -> None:
    # given
    files = MemoryFiles()
    files.run(
        FileAccess(scope=ANA),
        {"command": "create", "path": "/memories/count.md", "file_text": "count: 0\n"},
    )
    counts = {"successes": 0, "conflicts": 0, "attempts": 0}
    lock = threading.Lock()

    def edit(writer: int) -> None:
        access = FileAccess(scope=ANA, seen=SeenVersions())
        for _ in range(EDITS):
            view = files.run(access, {"command": "view", "path": "/memories/count.md"})
            number = int(re.search(r"count: (\d+)", view)[1])  # type: ignore[index]
            try:
                files.run(
                    access,
                    {
                        "command": "str_replace",
                        "path": "/memories/count.md",
                        "old_str": f"count: {number}\n",
                        "new_str": f"count: {number + 1}\n",
                    },
                )
                outcome = "successes"
            except FileVersionConflict:
                outcome = "conflicts"
            with lock:
                counts[outcome] += 1
                counts["attempts"] += 1

    # when
    race(edit, WRITERS)
    # then
    final = files.read(FileAccess(scope=ANA), "/memories/count.md")
    assert final is not None
    assert counts["successes"] + counts["conflicts"] == counts["attempts"] == WRITERS * EDITS
    assert final.content == f"count: {counts['successes']}\n"
    assert final.version == counts["successes"] + 1
    assert_one_chain_of_versions("/memories/count.md")


@pytest.mark.django_db(transaction=True)
def test_racing_editors_in_processes_of_their_own_lose_no_update() -> None:
    # given a counter, and writers that each set Django up in a process of its own on
    # the test database (spawned: nothing of this process is inherited)
    files = MemoryFiles()
    path = "/memories/processes.md"
    files.run(FileAccess(scope=ANA), {"command": "create", "path": path, "file_text": "count: 0\n"})
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(PROCESSES)
    results = context.Queue()
    url = worker_database_url()
    writers = [
        context.Process(
            target=edit_counter, args=(url, writer, path, PROCESS_EDITS, start, results)
        )
        for writer in range(PROCESSES)
    ]
    # when they read and edit it at the same time
    for writer in writers:
        writer.start()
    reports: dict[int, Any] = {}
    try:
        for _ in writers:
            number, report = results.get(timeout=120)
            reports[number] = report
    except queue.Empty:
        pytest.fail(f"a writer process did not report: {sorted(reports)} did")
    finally:
        for writer in writers:
            writer.join(timeout=30)
            if writer.is_alive():
                writer.kill()
    # then every edit either stood or was refused as a conflict, and none was lost
    errors = {number: report for number, report in reports.items() if isinstance(report, str)}
    assert not errors
    successes = sum(report["successes"] for report in reports.values())
    conflicts = sum(report["conflicts"] for report in reports.values())
    attempts = sum(report["attempts"] for report in reports.values())
    assert attempts == PROCESSES * PROCESS_EDITS
    assert successes + conflicts == attempts
    final = files.read(FileAccess(scope=ANA), path)
    assert final is not None
    assert final.content == f"count: {successes}\n"
    assert final.version == successes + 1
    assert MemoryFileVersion.objects.filter(path=path).count() == successes + 1
    assert_one_chain_of_versions(path)


@pytest.mark.django_db(transaction=True)
def test_racing_blind_inserts_are_made_again_on_what_stands() -> None:
    # given
    files = MemoryFiles()
    files.run(
        FileAccess(scope=ANA), {"command": "create", "path": "/memories/log.md", "file_text": ""}
    )
    kept: list[str] = []
    refused: list[str] = []
    lock = threading.Lock()

    def append(writer: int) -> None:
        access = FileAccess(scope=ANA)
        for number in range(EDITS):
            line = f"writer {writer} line {number}"
            try:
                files.run(
                    access,
                    {
                        "command": "insert",
                        "path": "/memories/log.md",
                        "insert_line": 0,
                        "insert_text": line,
                    },
                )
                with lock:
                    kept.append(line)
            except ConcurrentFileChange:
                with lock:
                    refused.append(line)

    # when
    race(append, WRITERS)
    # then
    final = files.read(FileAccess(scope=ANA), "/memories/log.md")
    assert final is not None and final.content is not None
    assert sorted(final.content.splitlines()) == sorted(kept)
    assert len(kept) + len(refused) == WRITERS * EDITS
    assert final.version == len(kept) + 1
    assert_one_chain_of_versions("/memories/log.md")


@pytest.mark.django_db
def test_a_renamed_directory_is_written_whole_or_not_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a directory of five files
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    for number in range(5):
        files.run(
            access,
            {"command": "create", "path": f"/memories/notes/{number}.md", "file_text": str(number)},
        )
    before = (
        MemoryFileVersion.objects.count(),
        list(MemoryFileHead.objects.values_list("path", "sequence")),
    )
    create = MemoryFileVersion.objects.create
    calls = {"n": 0}

    def failing_create(**fields: Any) -> MemoryFileVersion:
        calls["n"] += 1
        if calls["n"] == 7:
            raise RuntimeError("the disk is full")
        return create(**fields)

    monkeypatch.setattr(MemoryFileVersion.objects, "create", failing_create)
    # when the seventh of ten versions fails
    with pytest.raises(RuntimeError, match="the disk is full"):
        files.run(
            access,
            {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"},
        )
    # then nothing of the change stands
    after = (
        MemoryFileVersion.objects.count(),
        list(MemoryFileHead.objects.values_list("path", "sequence")),
    )
    assert after == before
    assert sorted(f.path for f in files.list(access)) == [
        f"/memories/notes/{n}.md" for n in range(5)
    ]
    monkeypatch.undo()
    files.run(
        access, {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"}
    )
    assert sorted(f.path for f in files.list(access)) == [f"/memories/old/{n}.md" for n in range(5)]


@pytest.mark.django_db
def test_a_change_that_loses_every_race_is_refused_and_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a store where another writer always took the sequence first
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    files.run(access, {"command": "create", "path": "/memories/a.md", "file_text": "a"})
    tries = {"n": 0}
    write = store.write_versions

    def losing(access: FileAccess, writes: Any, *, read: Any) -> Any:
        tries["n"] += 1
        write(access, writes, read=read)
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr("cogitator_memory.files.services.write_versions", losing)
    # when
    with pytest.raises(ConcurrentFileChange) as refused:
        files.run(
            access,
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"},
        )
    # then
    assert tries["n"] == TRIES
    assert refused.value.message == (
        "Another writer changed the memory around /memories/a.md at the same time. "
        "View it again and try again."
    )
    assert MemoryFileVersion.objects.count() == 1
    assert files.handle_tool_call(
        access, {"command": "delete", "path": "/memories/a.md"}
    ).startswith("Another writer changed the memory around /memories/a.md")
