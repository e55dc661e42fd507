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
from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, connection

from cogitator_memory.exceptions import (
    ConcurrentFileChange,
    FileVersionConflict,
    MemoryFileError,
)
from cogitator_memory.files import services, store
from cogitator_memory.files.access import FileAccess, SeenVersions
from cogitator_memory.files.commands import outcome_of
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


# --- a change is computed before its write transaction --------------------------------------


@pytest.mark.django_db(transaction=True)
def test_other_tenants_write_while_a_command_is_computed(
    monkeypatch: pytest.MonkeyPatch, short_lock_waits: None
) -> None:
    # given a file, and a command whose work lets another tenant write meanwhile
    files = MemoryFiles()
    files.run(
        FileAccess(scope=ANA),
        {"command": "create", "path": "/memories/a.md", "file_text": "one\ntwo\n"},
    )
    in_transaction: list[bool] = []

    def computed_while_another_tenant_writes(reader: Any, command: Any) -> Any:
        if command["command"] != "str_replace":  # the other tenant's
            return outcome_of(reader, command)
        in_transaction.append(connection.in_atomic_block)
        other = FileAccess(scope=MemoryScope("travel-desk"))
        race(
            lambda _: files.run(
                other, {"command": "create", "path": "/memories/b.md", "file_text": "b"}
            ),
            1,
        )
        return outcome_of(reader, command)

    monkeypatch.setattr(services, "outcome_of", computed_while_another_tenant_writes)
    # when
    files.run(
        FileAccess(scope=ANA),
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "two", "new_str": "2"},
    )
    # then the work ran outside any transaction, the other tenant's write was not held up
    assert in_transaction == [False]
    assert MemoryFileHead.objects.filter(agent_id="travel-desk", path="/memories/b.md").exists()
    final = files.read(FileAccess(scope=ANA), "/memories/a.md")
    assert final is not None and final.content == "one\n2\n"


def interfering_once(
    monkeypatch: pytest.MonkeyPatch, interfere: Callable[[], None]
) -> dict[str, int]:
    """Make the next command's first computation run ``interfere`` once it is computed
    (another writer getting in between the work and the write); returns the count of
    computations."""
    calls = {"computed": 0}

    def computed(reader: Any, command: Any) -> Any:
        outcome = outcome_of(reader, command)
        calls["computed"] += 1
        if calls["computed"] == 1:
            interfere()
        return outcome

    monkeypatch.setattr(services, "outcome_of", computed)
    return calls


@pytest.mark.django_db(transaction=True)
def test_a_change_whose_file_moved_meanwhile_is_made_again_on_what_stands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    files.run(access, {"command": "create", "path": "/memories/log.md", "file_text": "a\n"})
    calls = interfering_once(
        monkeypatch,
        lambda: MemoryFiles().put(access, "/memories/log.md", "a\nfrom the other writer\n"),
    )
    # when
    files.run(
        access,
        {"command": "insert", "path": "/memories/log.md", "insert_line": 0, "insert_text": "z"},
    )
    # then
    final = files.read(access, "/memories/log.md")
    assert final is not None
    assert final.content == "z\na\nfrom the other writer\n"
    assert calls["computed"] == 2  # made again on what the other writer left
    assert_one_chain_of_versions("/memories/log.md")


@pytest.mark.django_db(transaction=True)
def test_an_edit_of_a_file_that_changed_meanwhile_is_a_conflict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a caller that read the file
    files = MemoryFiles()
    reader = FileAccess(scope=ANA, seen=SeenVersions())
    files.run(reader, {"command": "create", "path": "/memories/a.md", "file_text": "count: 1\n"})
    files.run(reader, {"command": "view", "path": "/memories/a.md"})
    interfering_once(
        monkeypatch,
        lambda: MemoryFiles().put(FileAccess(scope=ANA), "/memories/a.md", "count: 5\n"),
    )
    # when
    with pytest.raises(FileVersionConflict) as refused:
        files.run(
            reader,
            {
                "command": "str_replace",
                "path": "/memories/a.md",
                "old_str": "count: 1",
                "new_str": "count: 2",
            },
        )
    # then
    assert refused.value.message == (
        "The file /memories/a.md has changed since you last read it. View it again and try again."
    )
    final = files.read(reader, "/memories/a.md")
    assert final is not None and final.content == "count: 5\n"


@pytest.mark.django_db(transaction=True)
def test_a_change_made_on_a_content_redacted_meanwhile_is_made_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    files.run(
        access, {"command": "create", "path": "/memories/a.md", "file_text": "the code is 1234\n"}
    )
    interfering_once(monkeypatch, lambda: MemoryFiles().redact(access, ["/memories/a.md"]))
    # when
    files.run(
        access,
        {"command": "insert", "path": "/memories/a.md", "insert_line": 1, "insert_text": "more"},
    )
    # then the redacted text is not written back
    assert not MemoryFileVersion.objects.filter(content__contains="1234").exists()
    final = files.read(access, "/memories/a.md")
    assert final is not None and final.content == "[redacted]\nmore\n"


@pytest.mark.django_db(transaction=True)
def test_a_file_created_meanwhile_where_a_directory_was_read_refuses_the_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    interfering_once(
        monkeypatch, lambda: MemoryFiles().put(access, "/memories/people", "a file now")
    )
    # when
    with pytest.raises(MemoryFileError) as refused:
        files.run(
            access, {"command": "create", "path": "/memories/people/ana.md", "file_text": "Ana"}
        )
    # then
    assert refused.value.message == (
        "Cannot write /memories/people/ana.md: /memories/people is a file, not a directory."
    )
    assert [f.path for f in files.list(access)] == ["/memories/people"]
