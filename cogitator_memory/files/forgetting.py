"""Memory file versions written at entries which go (a ``dependents.Dependent``).

A version keeps the entry it was written after (``place``). When entries are deleted or
redacted (or their thread cleared or deleted), in the same transaction, every version
written at one of them is redacted as ``MemoryFiles.redact`` redacts: its content becomes
the redaction marker and ``redaction`` says when and why; its path, sha256, sequence,
author and times stay. A file whose version in front (its head) was redacted so is then
deleted: a deletion version is added after it (written by memory, at no place, so no
branch sees the file any more), and its path, which may name what was forgotten, leaves
the listing while its history keeps the redacted versions.

The deletion is added as a change of the file is (``files/store.py``): at the sequence
after the head, the head moving only from the sequence read. A writer that raced it is
refused by the database and this step reads the head again, in a savepoint of its own,
so the change that forgets entries is not lost to a file edit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from cogitator_memory.dependents import Forgotten
from cogitator_memory.files.models import Author, MemoryFileHead, MemoryFileVersion
from cogitator_memory.grants import SCOPE_FIELDS
from cogitator_memory.threads.models import REDACTED_TEXT

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

__all__ = [
    "FORGOTTEN_REASON",
    "FileVersionsOnEntries",
    "delete_redacted_front",
    "live_versions_naming",
]

# The reason kept in a version's redaction when the entry it was written at went.
FORGOTTEN_REASON = "the entry it was written at was deleted or redacted"
# Entry ids per query: well under SQLite's parameter limit.
IDS_PER_QUERY = 500
# Ids a search of versions' text looks for per query: each is a LIKE condition of its own.
MARKS_PER_QUERY = 100
# Tries of adding a file's deletion against writers of the same file.
TRIES = 3


class FileVersionsOnEntries:
    """Redacts the file versions written at entries that go, and deletes the files whose
    version in front was one of them."""

    name = "file_versions"
    models = (MemoryFileVersion, MemoryFileHead)

    def __init__(self, *, clock: Callable[[], datetime] = timezone.now) -> None:
        self.clock = clock

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """A version is written by a memory tool command, not by an entry."""

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        ids = list(entry_ids)
        now = self.clock()
        redaction = {"at": now.isoformat(), "reason": FORGOTTEN_REASON}
        redacted: list[str] = []
        for start in range(0, len(ids), IDS_PER_QUERY):
            chunk = ids[start : start + IDS_PER_QUERY]
            # ``place`` is a foreign key: an indexed query.
            versions = MemoryFileVersion.objects.filter(
                place_id__in=chunk, content__isnull=False, redaction__isnull=True
            )
            redacted += list(versions.values_list("pk", flat=True))
        deleted = 0
        for start in range(0, len(redacted), IDS_PER_QUERY):
            chunk = redacted[start : start + IDS_PER_QUERY]
            MemoryFileVersion.objects.filter(pk__in=chunk).update(
                content=REDACTED_TEXT, redaction=redaction
            )
            # A head standing at a version with content is not a deletion: each of these
            # files is deleted (its head's size then 0), unless a writer got in front.
            fronts = MemoryFileHead.objects.filter(version_id__in=chunk)
            for head_pk in fronts.order_by("pk").values_list("pk", flat=True):
                deleted += _delete_file(head_pk, set(chunk), now)
        forgotten["file_versions"] += len(redacted)
        forgotten["files"] += deleted

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        # Files keep the scope they were written in, as items do.
        return None


def delete_redacted_front(head_pk: int, redacted: set[str], now: datetime) -> int:
    """Delete the file of the head ``head_pk`` when its version in front is one of the
    ``redacted`` versions (for other keepers of derived files, such as observations)."""
    return _delete_file(head_pk, redacted, now)


def _delete_file(head_pk: int, redacted: set[str], now: datetime) -> int:
    """Add a deletion after the head ``head_pk`` while its version is one of ``redacted``;
    1 when it was added, 0 when a writer put another version in front meanwhile."""
    for _attempt in range(TRIES):
        head = (
            MemoryFileHead.objects.filter(pk=head_pk)
            .values(*SCOPE_FIELDS, "scope_key", "path", "sequence", "version_id", "deleted")
            .first()
        )
        if head is None or head["deleted"] or head["version_id"] not in redacted:
            return 0
        try:
            with transaction.atomic():
                _add_deletion(head_pk, head, now)
            return 1
        except IntegrityError:
            continue  # another writer took the sequence: read the head again
    raise IntegrityError(f"The head of {head['path']} kept moving while it was deleted.")


def _add_deletion(head_pk: int, head: dict[str, Any], now: datetime) -> None:
    sequence = head["sequence"] + 1
    version = MemoryFileVersion.objects.create(
        **{field: head[field] for field in SCOPE_FIELDS},
        scope_key=head["scope_key"],
        path=head["path"],
        sequence=sequence,
        content=None,
        sha256=None,
        previous_id=head["version_id"],
        place_id=None,
        place_thread_id=None,
        author=Author.MEMORY,
        created_at=now,
    )
    moved = MemoryFileHead.objects.filter(pk=head_pk, sequence=head["sequence"]).update(
        version=version,
        sequence=sequence,
        deleted=True,
        size=0,
        place_thread_id=None,
        updated_at=now,
    )
    if not moved:
        raise IntegrityError(f"The head of {head['path']} moved while it was deleted.")


def live_versions_naming(
    ids: Sequence[str],
    *,
    agents: Sequence[str],
    where: Q,
    mark: Callable[[str], str],
    fields: Sequence[str] = ("id", "content"),
) -> Iterator[MemoryFileVersion]:
    """The versions of ``agents``'s files matching ``where`` whose text holds ``mark(id)``
    for one of ``ids``, not redacted and not deletions, each once. A candidate only: LIKE
    ignores case on SQLite and a short id may be part of a longer one, so callers read the
    marks of each version's text again."""
    seen: set[str] = set()
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), MARKS_PER_QUERY):
        naming = Q(pk__in=[])
        for one in unique[start : start + MARKS_PER_QUERY]:
            naming |= Q(content__contains=mark(one))
        versions = MemoryFileVersion.objects.filter(
            where, naming, agent_id__in=agents, content__isnull=False, redaction__isnull=True
        ).only(*fields)
        for version in versions:
            if version.pk not in seen:
                seen.add(version.pk)
                yield version
