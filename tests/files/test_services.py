"""MemoryFiles: scopes, branches, preconditions, whole-file writes, history, redaction and
the limits of a change."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cogitator_memory.exceptions import (
    EntryNotInThread,
    FileVersionConflict,
    InvalidInput,
    MemoryFileError,
    MemoryFileReadOnly,
    MemoryFileReserved,
    MemoryFileTooLarge,
    NoGrant,
)
from cogitator_memory.files.access import FileAccess, Place, SeenVersions
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.services import MAX_FILE_BYTES, MemoryFiles
from cogitator_memory.grants import Grants, MemoryScope
from tests.factories import EntryFactory, ThreadFactory

pytestmark = pytest.mark.django_db

AGENT = MemoryScope("concierge")
ANA = MemoryScope("concierge", user_id="ana")
BO = MemoryScope("concierge", user_id="bo")
ANA_TRIP = MemoryScope("concierge", user_id="ana", project_id="trip")


def create(files: MemoryFiles, access: FileAccess, path: str, text: str) -> str:
    return files.run(access, {"command": "create", "path": path, "file_text": text})


def contents(files: MemoryFiles, access: FileAccess) -> dict[str, str | None]:
    return {f.path: f.content for f in files.list(access)}


# --- scopes ------------------------------------------------------------------------------


def test_an_access_sees_its_scope_and_wider_ones_each_path_from_the_narrowest() -> None:
    # given
    files = MemoryFiles()
    create(files, FileAccess(scope=ANA), "/memories/rules.md", "ana's own")
    create(files, FileAccess(scope=AGENT), "/memories/rules.md", "agent-wide")
    create(files, FileAccess(scope=AGENT), "/memories/shared.md", "for all")
    create(files, FileAccess(scope=BO), "/memories/bo.md", "bo only")
    create(files, FileAccess(scope=ANA_TRIP), "/memories/trip.md", "trip")
    # when / then
    assert contents(files, FileAccess(scope=ANA)) == {
        "/memories/rules.md": "ana's own",
        "/memories/shared.md": "for all",
    }
    assert contents(files, FileAccess(scope=BO)) == {
        "/memories/bo.md": "bo only",
        "/memories/rules.md": "agent-wide",
        "/memories/shared.md": "for all",
    }
    assert contents(files, FileAccess(scope=ANA_TRIP))["/memories/trip.md"] == "trip"
    assert contents(files, FileAccess(scope=AGENT)) == {
        "/memories/rules.md": "agent-wide",
        "/memories/shared.md": "for all",
    }
    assert contents(files, FileAccess(scope=MemoryScope("other"))) == {}


def test_a_change_of_a_wider_file_is_written_in_front_of_it_in_the_access_scope() -> None:
    # given
    files = MemoryFiles()
    create(files, FileAccess(scope=AGENT), "/memories/rules.md", "be brief")
    ana = FileAccess(scope=ANA)
    # when
    files.run(
        ana,
        {
            "command": "str_replace",
            "path": "/memories/rules.md",
            "old_str": "brief",
            "new_str": "kind",
        },
    )
    files.run(ana, {"command": "delete", "path": "/memories/rules.md"})
    # then
    assert contents(files, FileAccess(scope=AGENT)) == {"/memories/rules.md": "be brief"}
    assert contents(files, ana) == {}
    assert contents(files, FileAccess(scope=BO)) == {"/memories/rules.md": "be brief"}
    history = files.history(ana, "/memories/rules.md")
    assert [(v.user_id, v.content) for v in history] == [
        (None, "be brief"),
        ("ana", "be kind"),
        ("ana", None),
    ]


def test_a_moved_file_keeps_every_limit_of_its_source() -> None:
    # given
    files = MemoryFiles()
    create(files, FileAccess(scope=ANA), "/memories/ana.md", "private")
    # when an access that sees ana's scope moves it
    files.run(
        FileAccess(scope=ANA),
        {
            "command": "rename",
            "old_path": "/memories/ana.md",
            "new_path": "/memories/people/ana.md",
        },
    )
    # then
    moved = MemoryFileVersion.objects.get(path="/memories/people/ana.md")
    assert (moved.user_id, moved.renamed_from, moved.content) == (
        "ana",
        "/memories/ana.md",
        "private",
    )
    assert contents(files, FileAccess(scope=BO)) == {}


def test_grants_narrow_what_an_access_may_see_and_write() -> None:
    # given
    files = MemoryFiles()
    create(files, FileAccess(scope=ANA), "/memories/ana.md", "x")
    only_bo = Grants.for_agents(["concierge"], {"concierge": ["bo"]})
    # when / then
    with pytest.raises(NoGrant):
        files.list(FileAccess(scope=ANA, grants=only_bo))
    assert contents(files, FileAccess(scope=BO, grants=only_bo)) == {}


# --- branches ----------------------------------------------------------------------------


def test_a_version_written_on_a_branch_is_seen_only_on_branches_holding_its_entry() -> None:
    # given a thread forking after its first entry
    thread = ThreadFactory(id="trip-thread")
    root = EntryFactory(thread=thread)
    left = EntryFactory(thread=thread, parent=root)
    right = EntryFactory(thread=thread, parent=root)
    files = MemoryFiles()

    def on(entry: object) -> FileAccess:
        return FileAccess(scope=ANA, place=Place(entry.thread_id, entry.pk))  # type: ignore[attr-defined]

    create(files, on(root), "/memories/plan.md", "go to Rome")
    # when each branch edits the file
    files.run(
        on(left),
        {
            "command": "str_replace",
            "path": "/memories/plan.md",
            "old_str": "Rome",
            "new_str": "Oslo",
        },
    )
    files.run(
        on(right),
        {
            "command": "str_replace",
            "path": "/memories/plan.md",
            "old_str": "Rome",
            "new_str": "Lima",
        },
    )
    create(files, on(left), "/memories/left-only.md", "l")
    # then
    assert contents(files, on(left)) == {
        "/memories/left-only.md": "l",
        "/memories/plan.md": "go to Oslo",
    }
    assert contents(files, on(right)) == {"/memories/plan.md": "go to Lima"}
    assert contents(files, on(root)) == {"/memories/plan.md": "go to Rome"}
    other_thread = EntryFactory(thread=ThreadFactory(id="other"))
    assert contents(files, on(other_thread))["/memories/plan.md"] == "go to Lima"
    assert [v.content for v in files.history(on(left), "/memories/plan.md")] == [
        "go to Rome",
        "go to Oslo",
    ]
    assert [v.sequence for v in files.history(on(right), "/memories/plan.md")] == [1, 3]


# --- preconditions -----------------------------------------------------------------------


def test_a_change_of_a_file_another_writer_changed_since_it_was_read_is_refused() -> None:
    # given
    files = MemoryFiles()
    seen = SeenVersions()
    heard: list[tuple[str, str | None]] = []
    model = FileAccess(scope=ANA, seen=seen, observe=lambda p, s: heard.append((p, s)))
    create(files, model, "/memories/todo.md", "milk\n")
    files.run(model, {"command": "view", "path": "/memories/todo.md"})
    files.run(
        FileAccess(scope=ANA),
        {"command": "insert", "path": "/memories/todo.md", "insert_line": 1, "insert_text": "eggs"},
    )
    # when
    with pytest.raises(FileVersionConflict) as refused:
        files.run(
            model,
            {
                "command": "str_replace",
                "path": "/memories/todo.md",
                "old_str": "milk",
                "new_str": "oat milk",
            },
        )
    # then
    assert refused.value.message == (
        "The file /memories/todo.md has changed since you last read it. "
        "View it again and try again."
    )
    assert len(heard) == 2 and heard[0] == heard[1]
    files.run(model, {"command": "view", "path": "/memories/todo.md"})
    files.run(
        model,
        {
            "command": "str_replace",
            "path": "/memories/todo.md",
            "old_str": "milk",
            "new_str": "oat milk",
        },
    )
    assert contents(files, model)["/memories/todo.md"] == "oat milk\neggs\n"


def test_an_explicit_expected_sha256_is_a_precondition() -> None:
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    create(files, access, "/memories/a.md", "a")
    with pytest.raises(FileVersionConflict):
        files.run(
            access, {"command": "delete", "path": "/memories/a.md", "expected_sha256": "0" * 64}
        )
    current = files.read(access, "/memories/a.md")
    assert current is not None
    files.run(
        access, {"command": "delete", "path": "/memories/a.md", "expected_sha256": current.sha256}
    )
    assert files.read(access, "/memories/a.md") is None


def test_put_writes_a_whole_file_made_from_the_version_it_names() -> None:
    # given
    files = MemoryFiles()
    access = FileAccess(scope=ANA, author="memory")
    # when
    first = files.put(access, "/memories/playbook.md", "rule 1\n", expected_sha256=None)
    second = files.put(access, "/memories/playbook.md", "rule 2\n", expected_sha256=first.sha256)
    # then
    assert (second.version, second.content, second.author) == (2, "rule 2\n", "memory")
    with pytest.raises(FileVersionConflict) as refused:
        files.put(access, "/memories/playbook.md", "rule 3\n", expected_sha256=first.sha256)
    assert refused.value.current_sha256 == second.sha256
    with pytest.raises(FileVersionConflict):
        files.put(access, "/memories/playbook.md", "again", expected_sha256=None)
    assert files.put(access, "/memories/playbook.md", "rule 4\n").version == 3


# --- limits ------------------------------------------------------------------------------


def test_a_read_only_access_views_and_changes_nothing() -> None:
    files = MemoryFiles()
    create(files, FileAccess(scope=ANA), "/memories/a.md", "a")
    reader = FileAccess(scope=ANA, read_only=True)
    assert "a.md" in files.run(reader, {"command": "view", "path": "/memories"})
    for command in (
        {"command": "create", "path": "/memories/b.md", "file_text": "b"},
        {"command": "delete", "path": "/memories/a.md"},
    ):
        with pytest.raises(MemoryFileReadOnly):
            files.run(reader, command)
    with pytest.raises(MemoryFileReadOnly):
        files.put(reader, "/memories/a.md", "x")
    assert MemoryFileVersion.objects.count() == 1


def test_reserved_paths_are_viewed_as_usual_and_never_changed() -> None:
    # given
    files = MemoryFiles()
    create(files, FileAccess(scope=ANA), "/memories/observations/ana.md", "likes tea")
    create(files, FileAccess(scope=ANA), "/memories/notes.md", "n")
    model = FileAccess(scope=ANA, reserved=("/memories/playbook.md", "/memories/observations/"))
    refused = [
        {
            "command": "str_replace",
            "path": "/memories/observations/ana.md",
            "old_str": "tea",
            "new_str": "x",
        },
        {"command": "create", "path": "/memories/playbook.md", "file_text": "x"},
        {
            "command": "rename",
            "old_path": "/memories/notes.md",
            "new_path": "/memories/playbook.md",
        },
        {
            "command": "rename",
            "old_path": "/memories/notes.md",
            "new_path": "/memories/observations/n.md",
        },
        {"command": "delete", "path": "/memories/observations"},
    ]
    # when / then
    assert "likes tea" in files.run(
        model, {"command": "view", "path": "/memories/observations/ana.md"}
    )
    for command in refused:
        with pytest.raises(MemoryFileReserved) as error:
            files.run(model, command)
        assert error.value.message.endswith("is kept by memory itself and is read-only here.")
    assert MemoryFileVersion.objects.count() == 2


def test_a_file_holds_at_most_one_mebibyte_and_a_change_eight() -> None:
    # given
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    # when / then
    with pytest.raises(MemoryFileError, match="a memory file holds at most 1 MiB"):
        create(files, access, "/memories/big.md", "x" * (MAX_FILE_BYTES + 1))
    for number in range(9):
        create(files, access, f"/memories/d/{number}.md", "x" * MAX_FILE_BYTES)
    with pytest.raises(MemoryFileError, match="one change writes at most 8 MiB"):
        files.run(
            access, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}
        )
    assert not MemoryFileHead.objects.filter(path__startswith="/memories/e").exists()


@pytest.mark.parametrize(
    ("command", "field"),
    [
        ({"command": "create", "path": "/memories/a.md", "file_text": "é" * 600_000}, "file_text"),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "x" * (2**20 + 1)},
            "old_str",
        ),
        (
            {
                "command": "str_replace",
                "path": "/memories/a.md",
                "old_str": "a",
                "new_str": "x" * (2**20 + 1),
            },
            "new_str",
        ),
        (
            {
                "command": "insert",
                "path": "/memories/a.md",
                "insert_line": 0,
                "insert_text": "\U0001f600" * 300_000,
            },
            "insert_text",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else value["command"],
)
def test_a_text_parameter_longer_than_a_file_is_refused_before_anything_is_read(
    command: dict[str, object], field: str, django_assert_num_queries: Any
) -> None:
    # given
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    # when
    with django_assert_num_queries(0), pytest.raises(MemoryFileTooLarge) as refused:
        files.run(access, command)
    # then it is an invalid input naming the parameter, and a refusal the model reads
    assert isinstance(refused.value, InvalidInput)
    assert isinstance(refused.value, MemoryFileError)
    assert refused.value.errors == {field: [refused.value.message]}
    assert refused.value.limit == MAX_FILE_BYTES and refused.value.size > MAX_FILE_BYTES
    assert refused.value.message == (
        f"Invalid `{field}` parameter: it holds {refused.value.size} bytes; a memory file "
        f"holds at most 1 MiB ({MAX_FILE_BYTES} bytes). Nothing was changed."
    )
    answer = files.answer_tool_call(access, command)
    assert (answer.text, answer.is_error) == (refused.value.message, True)


def test_a_change_that_would_make_a_file_too_large_names_the_parameter_and_file() -> None:
    # given
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    create(files, access, "/memories/a.md", "a" + "x" * (MAX_FILE_BYTES - 1))
    # when
    with pytest.raises(MemoryFileTooLarge) as refused:
        files.run(
            access,
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": "ab"},
        )
    # then
    assert refused.value.errors == {"new_str": [refused.value.message]}
    assert refused.value.message == (
        f"The file /memories/a.md would hold {MAX_FILE_BYTES + 1} bytes; a memory file holds "
        f"at most 1 MiB ({MAX_FILE_BYTES} bytes). Nothing was changed."
    )
    assert MemoryFileVersion.objects.count() == 1


def test_a_rename_too_large_is_refused_before_the_contents_are_read() -> None:
    # given nine files of 1 MiB in a directory
    files = MemoryFiles()
    access = FileAccess(scope=ANA)
    for number in range(9):
        create(files, access, f"/memories/d/{number}.md", "x" * MAX_FILE_BYTES)
    # when
    with CaptureQueriesContext(connection) as queries, pytest.raises(MemoryFileTooLarge):
        files.run(
            access, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}
        )
    # then no content was read
    assert not any("content" in query["sql"] for query in queries.captured_queries)


# --- redaction ---------------------------------------------------------------------------


def test_redaction_replaces_the_content_of_every_version_along_renames() -> None:
    # given
    files = MemoryFiles()
    ana = FileAccess(scope=ANA)
    create(files, ana, "/memories/old.md", "secret 1")
    files.run(
        ana, {"command": "str_replace", "path": "/memories/old.md", "old_str": "1", "new_str": "2"}
    )
    files.run(
        ana, {"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/new.md"}
    )
    create(files, FileAccess(scope=BO), "/memories/new.md", "bo's secret")
    create(files, ana, "/memories/keep.md", "keep")
    # when
    count = files.redact(ana, ["/memories/new.md"], "erasure request")
    # then
    assert count == 3
    rows = MemoryFileVersion.objects.filter(user_id="ana").exclude(path="/memories/keep.md")
    assert {(v.path, v.content) for v in rows} == {
        ("/memories/old.md", "[redacted]"),
        ("/memories/old.md", None),
        ("/memories/new.md", "[redacted]"),
    }
    assert all(v.redaction is None or v.redaction["reason"] == "erasure request" for v in rows)
    assert contents(files, FileAccess(scope=BO))["/memories/new.md"] == "bo's secret"
    assert files.redact(ana, ["/memories/new.md"], every_scope=True) == 4
    assert contents(files, FileAccess(scope=BO))["/memories/new.md"] == "[redacted]"
    assert contents(files, ana)["/memories/keep.md"] == "keep"


def test_an_access_refuses_an_unknown_author_and_a_place_off_its_thread() -> None:
    with pytest.raises(InvalidInput, match="The author is one of memory, user, model"):
        FileAccess(scope=ANA, author="robot")
    entry = EntryFactory(thread=ThreadFactory(id="t-1"))
    access = FileAccess(scope=ANA, place=Place("t-2", entry.pk))
    with pytest.raises(EntryNotInThread):
        create(MemoryFiles(), access, "/memories/a.md", "a")
    assert MemoryFileVersion.objects.count() == 0


def test_observe_hears_each_version_shown_or_written() -> None:
    # given
    heard: list[tuple[str, str | None]] = []
    access = FileAccess(scope=ANA, observe=lambda path, sha: heard.append((path, sha)))
    files = MemoryFiles()
    # when
    create(files, access, "/memories/a.md", "a")
    files.run(access, {"command": "view", "path": "/memories/a.md"})
    files.run(
        access, {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}
    )
    # then
    sha = hashlib.sha256(b"a").hexdigest()
    assert heard == [
        ("/memories/a.md", sha),
        ("/memories/a.md", sha),
        ("/memories/a.md", None),
        ("/memories/b.md", sha),
    ]
    assert [(f.path, f.size, f.content) for f in files.index(access)] == [
        ("/memories/b.md", 1, None)
    ]
