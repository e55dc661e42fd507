"""Reading the files an access sees, and writing versions of them.

Reads go through the heads table: the newest version of each path in each scope. A head
written in the thread of the access's place on another branch is replaced by the newest
version of its path and scope that the branch holds (one query per such path). Of the
scopes that hold a path, the narrowest wins, a deletion included: a change stands in
front of the wider file it changed.

A change is computed on what a ``Reader`` read, outside the write transaction; in it,
``Reader.still_stands`` checks again, in one query of heads, that nothing it read has
moved since (see ``services.MemoryFiles``).

Writes add one version per path and move its head, in the caller's transaction. The next
sequence comes from the head; the unique (scope, path, sequence) constraint refuses a
second writer at the same sequence, and the head moves only from the sequence read, so a
writer that lost a race gets an ``IntegrityError`` and the service makes its change again
on what stands.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connections, router
from django.db.models import Q
from django.utils import timezone

from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.limits import byte_size
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion, scope_key
from cogitator_memory.files.paths import is_at_or_under
from cogitator_memory.files.querysets import on_branch_q, under_q
from cogitator_memory.grants import SCOPE_FIELDS, MemoryScope
from cogitator_memory.threads.selectors import get_path

__all__ = [
    "FileState",
    "Reader",
    "Write",
    "byte_size",
    "lock_paths_of_agent",
    "sha256_of",
    "write_versions",
]


def sha256_of(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class FileState:
    """What an access sees at one path: the version in front (a deletion when
    ``deleted``), of which scope."""

    path: str
    scope: MemoryScope
    version_id: str
    sequence: int
    sha256: str | None
    size: int
    deleted: bool

    @property
    def exists(self) -> bool:
        return not self.deleted


def narrowness(scope: MemoryScope) -> tuple[int, bool, bool, bool]:
    """Orders scopes from wide to narrow: by how many limits they have, then a thread
    before a user before a project (a thread's scope is the most particular)."""
    limits = (scope.thread_id is not None, scope.user_id is not None, scope.project_id is not None)
    return (sum(limits), *limits)


_HEAD_FIELDS = (
    *SCOPE_FIELDS,
    "scope_key",
    "path",
    "sequence",
    "deleted",
    "size",
    "place_thread_id",
    "version_id",
    "version__place_id",
    "version__sha256",
)


class Reader:
    """The files one access sees, read on demand within the current transaction."""

    def __init__(self, access: FileAccess) -> None:
        self.access = access
        self._branch: frozenset[str] | None = None
        # The head sequence of every (scope key, path) read, and the paths and
        # directories asked about: a write must find the head it was computed from.
        self.head_sequences: dict[tuple[str, str], int] = {}
        self._asked_paths: set[str] = set()
        self._asked_directories: set[str] = set()
        # What each path was first read as: later reads of one attempt answer the same,
        # so a change is computed and checked on one state of each file even where
        # each statement sees the newest commits (READ COMMITTED).
        self._known: dict[str, FileState | None] = {}
        # Whether two reads saw one head at two sequences (it moved between them), and
        # the versions whose content was read: what ``still_stands`` checks again.
        self._moved = False
        self._contents_read: set[str] = set()

    def asked_about(self, path: str) -> bool:
        """Whether a read covered ``path`` (so a missing head there was seen missing)."""
        return path in self._asked_paths or any(
            is_at_or_under(path, d) and path != d for d in self._asked_directories
        )

    # --- the branch ----------------------------------------------------------------------

    def branch(self) -> frozenset[str]:
        """The ids of the entries on the access's branch (read once)."""
        place = self.access.place
        if place is None:
            return frozenset()
        if self._branch is None:
            entries = get_path(place.thread_id, leaf_id=place.leaf_id, types="all")
            self._branch = frozenset(entry.pk for entry in entries)
        return self._branch

    def _on_branch(self, place_thread_id: str | None, place_id: str | None) -> bool:
        place = self.access.place
        if place is None or place_thread_id is None or place_thread_id != place.thread_id:
            return True
        return place_id is not None and place_id in self.branch()

    # --- heads ---------------------------------------------------------------------------

    def states(self, *, at: Iterable[str] = (), under: Iterable[str] = ()) -> dict[str, FileState]:
        """What the access sees at each path of ``at`` and at every path under each
        directory of ``under`` (paths it sees nothing at are left out)."""
        asked = set(at)
        directories = sorted(set(under))
        if not directories and asked <= self._known.keys():
            return {p: s for p in asked if (s := self._known[p]) is not None}
        exact = sorted(asked)
        best: dict[str, FileState] = {}
        off_branch: list[dict] = []
        for row in self._heads(exact, directories, _HEAD_FIELDS):
            path = row["path"]
            seen = self.head_sequences.setdefault((row["scope_key"], path), row["sequence"])
            if seen != row["sequence"]:
                self._moved = True
            if not self._on_branch(row["place_thread_id"], row["version__place_id"]):
                off_branch.append(row)
                continue
            self._offer(best, self._state(row, row["version_id"], row["version__sha256"]))
        for row in off_branch:
            state = self._newest_on_branch(row["scope_key"], row["path"])
            if state is not None:
                self._offer(best, state)
        for path in exact:
            self._known.setdefault(path, best.get(path))
        for path, state in best.items():
            self._known.setdefault(path, state)
        self._asked_paths.update(exact)
        self._asked_directories.update(directories)
        return {p: s for p in best if (s := self._known[p]) is not None}

    def state(self, path: str) -> FileState | None:
        return self.states(at=[path]).get(path)

    def _heads(
        self, exact: Collection[str], directories: Collection[str], fields: Sequence[str]
    ) -> Iterator[dict[str, Any]]:
        """The rows (``fields``) of the heads the access sees at the paths of ``exact``
        and under the directories of ``directories``."""
        condition = Q(path__in=sorted(exact)) if exact else Q(pk__in=[])
        for directory in sorted(directories):
            condition |= under_q(directory)
        heads = MemoryFileHead.objects.seen_from(self.access.scope)
        if self.access.grants is not None:
            heads = heads.visible_to(self.access.grants)
        for row in heads.filter(condition).values(*fields):
            path = row["path"]
            # LIKE ignores the case of ASCII letters on SQLite.
            if path in exact or any(is_at_or_under(path, d) and path != d for d in directories):
                yield row

    def still_stands(self) -> bool:
        """Whether what this reader read still stands: the same heads, at the same
        sequences, at every path and under every directory it asked about, and no content
        it read redacted since. Sequences only grow, so an unchanged sequence is an
        unchanged file. One query for the heads (what a change asked about, not the
        contents) and one for the redactions."""
        if self._moved:
            return False
        if self._asked_paths or self._asked_directories:
            now = {
                (row["scope_key"], row["path"]): row["sequence"]
                for row in self._heads(
                    self._asked_paths, self._asked_directories, ("scope_key", "path", "sequence")
                )
            }
            if now != self.head_sequences:
                return False
        return not (
            self._contents_read
            and MemoryFileVersion.objects.filter(
                pk__in=sorted(self._contents_read), redaction__isnull=False
            ).exists()
        )

    @staticmethod
    def _state(row: dict, version_id: str, sha256: str | None) -> FileState:
        return FileState(
            path=row["path"],
            scope=MemoryScope(**{field: row[field] for field in SCOPE_FIELDS}),
            version_id=version_id,
            sequence=row["sequence"],
            sha256=sha256,
            size=row["size"],
            deleted=sha256 is None,
        )

    @staticmethod
    def _offer(best: dict[str, FileState], state: FileState) -> None:
        current = best.get(state.path)
        if current is None or narrowness(state.scope) > narrowness(current.scope):
            best[state.path] = state

    def _newest_on_branch(self, key: str, path: str) -> FileState | None:
        """The newest version of ``path`` in one scope that the access's branch holds."""
        place = self.access.place
        assert place is not None
        version = (
            MemoryFileVersion.objects.of_scope_key(key)
            .filter(path=path)
            .filter(on_branch_q(place.thread_id, self.branch()))
            .order_by("-sequence")
            .values(*SCOPE_FIELDS, "path", "sequence", "id", "sha256", "content")
            .first()
        )
        if version is None:
            return None
        content = version.pop("content")
        version["size"] = 0 if content is None else byte_size(content)
        return self._state(version, version["id"], version["sha256"])

    # --- contents ------------------------------------------------------------------------

    def contents(self, states: Sequence[FileState]) -> dict[str, str]:
        """The content of each (existing) file, by path."""
        ids = {state.version_id: state.path for state in states if state.exists}
        self._contents_read.update(ids)
        rows = MemoryFileVersion.objects.filter(pk__in=list(ids)).values_list("id", "content")
        return {ids[version_id]: content or "" for version_id, content in rows}

    def content(self, state: FileState) -> str:
        return self.contents([state]).get(state.path, "")


# --- writing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    """One version to add: ``content`` None for a deletion. ``base`` is what the access
    saw at the path (or, for a moved file, at its source): the new version keeps every
    limit of its scope and names it as previous."""

    path: str
    content: str | None
    base: FileState | None
    renamed_from: str | None = None


def target_scope(access_scope: MemoryScope, base: FileState | None) -> MemoryScope:
    """Where a change is written: the access's scope with every limit of the version it
    changes, so a file is never shared wider than it was."""
    if base is None:
        return access_scope
    fields = {
        field: getattr(access_scope, field) or getattr(base.scope, field) for field in SCOPE_FIELDS
    }
    return MemoryScope(**fields)


def lock_paths_of_agent(agent_id: str) -> None:
    """Serialize, per agent, the changes that add paths (create, rename, put), until the
    transaction ends: whether a new path sits under a file, or a file has files under it,
    is then decided on what every other such change committed. Edits of files that stand
    need no lock: the sequence constraint settles them."""
    connection = connections[router.db_for_write(MemoryFileVersion)]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"cogitator_memory.files:{agent_id}"],
            )
    # SQLite: the IMMEDIATE transaction holds the database's write lock already.


def write_versions(
    access: FileAccess, writes: Sequence[Write], *, read: Reader
) -> list[MemoryFileVersion]:
    """Add a version for each write and move the heads, in the open transaction.

    ``read`` is the reader the writes were computed with: each version takes the sequence
    after the head that reader saw. Raises ``IntegrityError`` when another writer added
    a version since (at that sequence, or moved the head): the caller rolls back its
    savepoint and makes the change again on what stands.
    """
    place = access.place
    now = timezone.now()
    written = []
    for write in writes:
        scope = target_scope(access.scope, write.base)
        key = scope_key(**scope.as_fields())
        head = (
            MemoryFileHead.objects.of_scope_key(key)
            .filter(path=write.path)
            .values("pk", "sequence")
            .first()
        )
        if read.asked_about(write.path):
            seen = read.head_sequences.get((key, write.path))
            if (None if head is None else head["sequence"]) != seen:
                raise IntegrityError(f"{write.path} changed while the change was made.")
        sequence = 1 if head is None else head["sequence"] + 1
        version = MemoryFileVersion.objects.create(
            **scope.as_fields(),
            scope_key=key,
            path=write.path,
            sequence=sequence,
            content=write.content,
            sha256=None if write.content is None else sha256_of(write.content),
            previous_id=None if write.base is None else write.base.version_id,
            place_id=None if place is None else place.leaf_id,
            place_thread_id=None if place is None else place.thread_id,
            renamed_from=write.renamed_from,
            author=access.author,
            created_at=now,
        )
        head_fields = {
            "version": version,
            "sequence": sequence,
            "deleted": write.content is None,
            "size": 0 if write.content is None else byte_size(write.content),
            "place_thread_id": version.place_thread_id,
            "updated_at": now,
        }
        if head is None:
            MemoryFileHead.objects.create(
                **scope.as_fields(), scope_key=key, path=write.path, **head_fields
            )
        elif not MemoryFileHead.objects.filter(pk=head["pk"], sequence=head["sequence"]).update(
            **head_fields
        ):
            raise IntegrityError(f"The head of {write.path} moved while it was written.")
        written.append(version)
    return written
