"""Memory file versions written at entries that go are redacted, and a file whose version
in front was one of them is deleted: its path leaves the listing, its history keeps the
redacted versions (``files/forgetting.py``)."""

from __future__ import annotations

import pytest
from django.db import transaction

from cogitator_memory import dependents
from cogitator_memory.exceptions import FileVersionConflict
from cogitator_memory.files.access import FileAccess, Place
from cogitator_memory.files.forgetting import FORGOTTEN_REASON
from cogitator_memory.files.models import Author, MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
SECRET = "u1 pet: dog PEANUTSECRET"


def at(entry: Entry) -> FileAccess:
    return FileAccess(scope=ANA, place=Place(entry.thread_id, entry.pk))


def create(files: MemoryFiles, access: FileAccess, path: str, text: str) -> None:
    files.run(access, {"command": "create", "path": path, "file_text": text})


def listing(files: MemoryFiles, access: FileAccess) -> dict[str, str | None]:
    return {file.path: file.content for file in files.list(access)}


def history(files: MemoryFiles, access: FileAccess, path: str) -> list[str | None]:
    return [version.content for version in files.history(access, path)]


@pytest.fixture
def conversation() -> tuple[Entry, Entry]:
    thread = threads.create_thread("concierge", {"userId": "ana"}, thread_id="t-pets")
    told = threads.add_entry(thread.pk, role="user", content="My dog is PEANUTSECRET.")
    later = threads.add_entry(thread.pk, role="user", content="Book a table, please.")
    return told, later


@pytest.mark.parametrize("how", ["delete_entry", "redact_entry", "clear_thread", "delete_thread"])
def test_a_file_written_at_a_gone_entry_leaves_the_listing_and_its_history_keeps_no_text(
    conversation: tuple[Entry, Entry], how: str
) -> None:
    # given a file written at the entry that goes, and one written at an entry that stays
    told, later = conversation
    files = MemoryFiles()
    create(files, at(told), "/memories/pets.md", SECRET)
    create(files, FileAccess(scope=ANA), "/memories/kept.md", "window seat")
    # when
    if how == "delete_entry":
        threads.delete_entry(told.pk)
    elif how == "redact_entry":
        threads.redact_entry(told.pk, reason="asked")
    elif how == "clear_thread":
        threads.clear_thread(told.thread_id)
    else:
        threads.delete_thread(told.thread_id)
    # then the file is gone from every listing, and its history holds no text of it
    anywhere = FileAccess(scope=ANA)
    assert listing(files, anywhere) == {"/memories/kept.md": "window seat"}
    if how in ("delete_entry", "redact_entry"):
        assert listing(files, at(later)) == {"/memories/kept.md": "window seat"}
    assert files.read(anywhere, "/memories/pets.md") is None
    assert history(files, anywhere, "/memories/pets.md") == ["[redacted]", None]
    assert not MemoryFileVersion.objects.filter(content__contains="PEANUTSECRET").exists()
    first, deletion = files.history(anywhere, "/memories/pets.md")
    assert first.redaction is not None and first.redaction["reason"] == FORGOTTEN_REASON
    assert first.sha256 is not None  # of the content as written, kept
    assert (deletion.author, deletion.place_id, deletion.place_thread_id) == (
        Author.MEMORY,
        None,
        None,
    )
    assert deletion.previous_id == first.pk
    head = MemoryFileHead.objects.get(path="/memories/pets.md")
    assert (head.version_id, head.sequence, head.deleted, head.size) == (deletion.pk, 2, True, 0)


def test_a_version_at_a_gone_entry_behind_a_newer_one_is_redacted_and_the_file_stays(
    conversation: tuple[Entry, Entry],
) -> None:
    # given a file written at the entry that goes, then rewritten at one that stays
    told, later = conversation
    files = MemoryFiles()
    create(files, at(told), "/memories/pets.md", SECRET)
    files.put(at(later), "/memories/pets.md", "a dog")
    # when
    threads.delete_entry(told.pk)
    # then the file stands as the later entry left it, and its first version holds no text
    assert listing(files, at(later)) == {"/memories/pets.md": "a dog"}
    assert history(files, at(later), "/memories/pets.md") == ["[redacted]", "a dog"]


def test_what_went_is_counted_and_a_second_forget_adds_nothing(
    conversation: tuple[Entry, Entry],
) -> None:
    # given two files written at the entry, one of them edited there again
    told, _later = conversation
    files = MemoryFiles()
    create(files, at(told), "/memories/pets.md", SECRET)
    create(files, at(told), "/memories/vet.md", "Dr PEANUTSECRET")
    files.run(
        at(told),
        {"command": "str_replace", "path": "/memories/vet.md", "old_str": "Dr", "new_str": "Vet"},
    )
    # when
    with transaction.atomic():
        forgotten = dependents.forget_entries([told.pk])
        again = dependents.forget_entries([told.pk])
    # then three versions were redacted and two files deleted, once
    assert (forgotten["file_versions"], forgotten["files"]) == (3, 2)
    assert (again["file_versions"], again["files.deleted"]) == (0, 0)
    assert MemoryFileVersion.objects.filter(content__isnull=True).count() == 2


def test_a_failed_change_keeps_the_files(conversation: tuple[Entry, Entry]) -> None:
    told, _later = conversation
    files = MemoryFiles()
    create(files, at(told), "/memories/pets.md", SECRET)
    with pytest.raises(RuntimeError), transaction.atomic():
        threads.delete_entry(told.pk)
        raise RuntimeError("rolled back")
    assert listing(files, at(told)) == {"/memories/pets.md": SECRET}


def test_a_writer_that_read_the_file_before_it_was_forgotten_is_refused(
    conversation: tuple[Entry, Entry],
) -> None:
    # given a caller that read the file at the entry, then the entry went
    told, later = conversation
    files = MemoryFiles()
    create(files, at(told), "/memories/pets.md", SECRET)
    reader = FileAccess(scope=ANA)
    [seen] = files.list(reader)
    threads.delete_entry(told.pk)
    # when it writes the file on what it read, then the write is refused as a conflict
    with pytest.raises(FileVersionConflict):
        files.put(reader, "/memories/pets.md", SECRET + " and a cat", expected_sha256=seen.sha256)
    # and a write that names no version starts the file again, after its deletion
    files.put(FileAccess(scope=ANA), "/memories/pets.md", "a cat")
    assert history(files, at(later), "/memories/pets.md") == ["[redacted]", None, "a cat"]
