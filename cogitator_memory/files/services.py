"""Memory files: the memory tool's commands over versioned files, and the file services
around them (list, history, index, put, redact).

A change is made in two steps. First, outside any transaction of its own, it reads what
the access sees, checks the caller's preconditions, computes the versions to write and
checks the limits (``files/limits.py``): all the reading and the work on the text, which
would otherwise hold the database's write lock (SQLite has one for the whole database)
while every other tenant waits. Then one transaction (a savepoint inside the caller's)
checks again that every head it read stands at the sequence read and no content it read
was redacted (``Reader.still_stands``, one query), and adds the versions whole or not at
all. When something moved in between, or another writer added a version at a sequence
this change meant to take (the database refuses it: ``IntegrityError``), the change is
made again on what stands (a caller's precondition then refuses it as a conflict), up to
``TRIES`` times, the last one read and computed inside the transaction, so that on SQLite
it cannot lose again; then it is refused with ``ConcurrentFileChange``. Changes that add
paths take the agent's path lock first in their transaction (see
``store.lock_paths_of_agent``), so no two of them can put a file under another file.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from cogitator_memory import policy
from cogitator_memory.exceptions import (
    ConcurrentFileChange,
    FileVersionConflict,
    InvalidMemoryPath,
    MemoryFileError,
    MemoryFileReadOnly,
)
from cogitator_memory.files import texts
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.commands import ADDS_PATHS, Outcome, file_above, outcome_of
from cogitator_memory.files.limits import (
    MAX_CHANGE_BYTES,
    MAX_FILE_BYTES,
    check_change_size,
    check_file_size,
    check_text_parameter,
)
from cogitator_memory.files.models import MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.paths import ROOT, check_not_reserved, normalize
from cogitator_memory.files.store import (
    FileState,
    Reader,
    Write,
    byte_size,
    lock_paths_of_agent,
    sha256_of,
    target_scope,
    write_versions,
)
from cogitator_memory.grants import MemoryScope
from cogitator_memory.jsondata import text_problem
from cogitator_memory.threads.models import REDACTED_TEXT
from cogitator_memory.threads.selectors import entry_in_thread

# MAX_FILE_BYTES and MAX_CHANGE_BYTES are defined in files/limits.py; named here too.
__all__ = ["MAX_CHANGE_BYTES", "MAX_FILE_BYTES", "TRIES", "UNSET", "MemoryFile", "MemoryFiles"]

# A change made again this many times in a row lost every race: the memory is too busy
# around its path, and the caller is told to look again.
TRIES = 3
# Commands that change a file the caller may have read: they take its sha256 as a
# precondition.
PRECONDITIONED = frozenset({"str_replace", "insert", "delete", "rename"})
# The parameter whose text makes the content a command writes (named by a refusal of a
# file too large).
CONTENT_PARAMETER = {
    "create": "file_text",
    "str_replace": "new_str",
    "insert": "insert_text",
    "rename": "old_path",
}


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class MemoryFile:
    """A file as an access sees it: its content (None when listed without), the sha256
    of that content, its size in bytes (UTF-8), the sequence of its version in its scope,
    the scope it stands in, who wrote the version and when."""

    path: str
    content: str | None
    sha256: str
    size: int
    version: int
    version_id: str
    scope: MemoryScope
    author: str
    updated_at: datetime


@dataclass(frozen=True)
class ToolAnswer:
    """What a memory tool call answers: the text, and whether it is an error."""

    text: str
    is_error: bool


class MemoryFiles:
    """The rules of memory files over the database (see the module docstring)."""

    def __init__(self, *, clock: Callable[[], datetime] = timezone.now) -> None:
        self.clock = clock

    # --- the memory tool ---------------------------------------------------------------

    def run(self, access: FileAccess, command: Mapping[str, Any]) -> str:
        """Run one memory-tool command (``view``, ``create``, ``str_replace``, ``insert``,
        ``delete``, ``rename``, with the tool's parameters, and optionally
        ``expected_sha256`` for the file changed) and return what the model reads.

        Raises ``MemoryFileError`` (with the text the model reads) when the command is
        refused, ``FileVersionConflict`` when the file changed since the caller read it,
        ``ConcurrentFileChange`` when other writers won every try, ``NoGrant`` when the
        access's scope lies outside its grants. Nothing is changed when it raises.
        """
        self._check_grants(access)
        name = command.get("command") if isinstance(command, Mapping) else None
        if name == "view":
            outcome = outcome_of(Reader(access), command)
            for path, sha256 in outcome.shown:
                access.heard(path, sha256)
            return outcome.answer
        self._check_writable(access)

        def compute(reader: Reader) -> Outcome:
            if name in PRECONDITIONED:
                # Before the command: an edit of a file that changed since it was read
                # is refused as such, not by what the edit finds in the new text.
                self._check_read_version(access, reader, command)
            outcome = outcome_of(reader, command)
            self._check_change(
                access, outcome, command, field=CONTENT_PARAMETER.get(str(name), "command")
            )
            return outcome

        outcome, _ = self._change(
            access, compute, adds_paths=name in ADDS_PATHS, path=_command_path(command)
        )
        for write in outcome.writes:
            access.heard(write.path, None if write.content is None else sha256_of(write.content))
        return outcome.answer

    def handle_tool_call(self, access: FileAccess, tool_input: Any) -> str:
        """The text of the tool result for a Claude ``memory`` tool call: the answer, or
        the refusal as the model reads it."""
        return self.answer_tool_call(access, tool_input).text

    def answer_tool_call(self, access: FileAccess, tool_input: Any) -> ToolAnswer:
        """``handle_tool_call`` with whether the answer is an error (``is_error`` of the
        tool result)."""
        if not isinstance(tool_input, Mapping):
            return ToolAnswer(
                "A memory command is an object with a `command` field.", is_error=True
            )
        try:
            return ToolAnswer(self.run(access, tool_input), is_error=False)
        except MemoryFileError as refusal:
            return ToolAnswer(refusal.message, is_error=True)

    # --- reads ---------------------------------------------------------------------------

    def list(
        self, access: FileAccess, *, under: str = ROOT, with_content: bool = True
    ) -> builtins.list[MemoryFile]:
        """The files the access sees under ``under`` (``/memories`` by default), by path.
        Reads heads, not history."""
        self._check_grants(access)
        directory = normalize(under)
        reader = Reader(access)
        states = [
            state
            for state in reader.states(at=[directory], under=[directory]).values()
            if state.exists
        ]
        return self._files(sorted(states, key=lambda s: s.path), with_content=with_content)

    def read(self, access: FileAccess, path: str) -> MemoryFile | None:
        """The file at ``path`` as the access sees it, or None."""
        self._check_grants(access)
        state = Reader(access).state(normalize(path))
        if state is None or not state.exists:
            return None
        return self._files([state], with_content=True)[0]

    def index(self, access: FileAccess) -> builtins.list[MemoryFile]:
        """The files a run's context lists: path, size and version of each, no content."""
        return self.list(access, with_content=False)

    def history(
        self, access: FileAccess, path: str, *, with_content: bool = True
    ) -> builtins.list[MemoryFileVersion]:
        """Every version of the file at ``path`` as the access sees it, oldest first: the
        versions it was made from, back through renames (``previous``). Empty when the
        access sees nothing there. ``with_content=False`` leaves the content unread
        (deferred), for a listing of a long history of large files."""
        self._check_grants(access)
        path = normalize(path)
        state = Reader(access).state(path)
        if state is None:
            return []
        chain: builtins.list[MemoryFileVersion] = []
        versions: dict[str, MemoryFileVersion] = {}
        read = MemoryFileVersion.objects.all()
        if not with_content:
            read = read.defer("content")
        next_id: str | None = state.version_id
        while next_id is not None:
            if next_id not in versions:
                anchor = read.filter(pk=next_id).first()
                if anchor is None:
                    break
                # One query per path and scope the file lived at, not one per version.
                versions.update(
                    (version.pk, version)
                    for version in read.of_scope_key(anchor.scope_key).filter(path=anchor.path)
                )
                versions[anchor.pk] = anchor
            version = versions[next_id]
            chain.append(version)
            next_id = version.previous_id
        chain.reverse()
        return chain

    # --- whole files ---------------------------------------------------------------------

    def put(
        self,
        access: FileAccess,
        path: str,
        text: str,
        expected_sha256: str | None = UNSET,
    ) -> MemoryFile:
        """Write a whole file, creating it when it does not exist. ``expected_sha256``
        names the version ``text`` was made from (None: the file did not exist); the write
        is refused with ``FileVersionConflict`` when the file stands otherwise. Raises
        ``MemoryFileError`` as the commands do."""
        self._check_grants(access)
        self._check_writable(access)
        path = normalize(path)
        if path == ROOT:
            raise texts.not_a_file(path)
        problem = text_problem(text) if isinstance(text, str) else "a text is expected."
        if problem:
            raise texts.bad_text("text", problem)
        check_text_parameter("text", text)

        def compute(reader: Reader) -> Outcome:
            state = reader.state(path)
            current = state.sha256 if state is not None and state.exists else None
            if expected_sha256 is not UNSET and expected_sha256 != current:
                raise FileVersionConflict(
                    path, expected_sha256=expected_sha256, current_sha256=current
                )
            if current is None:
                if any(s.exists for s in reader.states(under=[path]).values()):
                    raise texts.not_a_file(path)
                above = file_above(reader, path)
                if above is not None:
                    raise texts.under_a_file(path, above)
            outcome = Outcome(answer="", writes=[Write(path=path, content=text, base=state)])
            self._check_change(access, outcome, {}, field="text", check_seen=False)
            return outcome

        outcome, versions = self._change(access, compute, adds_paths=True, path=path)
        version = versions[0]
        state = FileState(
            path=path,
            scope=target_scope(access.scope, outcome.writes[0].base),
            version_id=version.pk,
            sequence=version.sequence,
            sha256=version.sha256,
            size=byte_size(text),
            deleted=False,
        )
        access.heard(path, state.sha256)
        return self._files([state], with_content=True)[0]

    # --- redaction -----------------------------------------------------------------------

    def redact(
        self,
        access: FileAccess,
        paths: Iterable[str],
        reason: str | None = None,
        *,
        every_scope: bool = False,
    ) -> int:
        """Replace the content of every version of these files with ``[redacted]`` and
        keep the rest (path, sha256, sequence, author, times), with the paths they were
        renamed from and to. The versions of the scopes the access sees, or of every scope
        of its agent with ``every_scope``. Returns how many versions were redacted.
        Raises ``MemoryFileReadOnly`` for a read-only access."""
        self._check_grants(access)
        self._check_writable(access)
        wanted = {normalize(path) for path in paths}
        if reason is not None and (not isinstance(reason, str) or text_problem(reason)):
            raise texts.bad_text("reason", "a text is expected.")
        if every_scope:
            versions = MemoryFileVersion.objects.filter(agent_id=access.scope.agent_id)
        else:
            versions = MemoryFileVersion.objects.seen_from(access.scope)
        if access.grants is not None:
            versions = versions.visible_to(access.grants)
        with transaction.atomic():
            # The paths a file had: follow renames both ways until no new path turns up.
            frontier = set(wanted)
            while frontier:
                rows = versions.filter(
                    Q(path__in=sorted(frontier)) | Q(renamed_from__in=sorted(frontier))
                ).values_list("path", "renamed_from")
                found = {path for pair in rows for path in pair if path is not None}
                frontier = found - wanted
                wanted |= found
            redaction = {"at": self.clock().isoformat(), "reason": reason}
            targets = versions.filter(path__in=sorted(wanted), content__isnull=False)
            ids = list(targets.values_list("pk", flat=True))
            count = MemoryFileVersion.objects.filter(pk__in=ids).update(
                content=REDACTED_TEXT, redaction=redaction
            )
            MemoryFileHead.objects.filter(version_id__in=ids).update(size=byte_size(REDACTED_TEXT))
        return count

    # --- the rules -----------------------------------------------------------------------

    @staticmethod
    def _check_grants(access: FileAccess) -> None:
        policy.require_write(access.grants, access.scope.agent_id, access.scope.user_id)

    @staticmethod
    def _check_writable(access: FileAccess) -> None:
        """``MemoryFileReadOnly`` for a read-only access; ``EntryNotInThread`` for a place
        whose entry is not in its thread (checked before writing: the key to the entry
        would fail only at commit on PostgreSQL, past the savepoint of a try)."""
        if access.read_only:
            raise MemoryFileReadOnly()
        place = access.place
        if place is not None:
            entry_in_thread(place.leaf_id, place.thread_id, field="place")

    @staticmethod
    def _check_change(
        access: FileAccess,
        outcome: Outcome,
        command: Mapping[str, Any],
        *,
        field: str,
        check_seen: bool = True,
    ) -> None:
        """Limits and preconditions of a change, checked on what it was computed on;
        ``field`` is the parameter a refusal of a file too large names."""
        check_not_reserved([write.path for write in outcome.writes], access.reserved_canonical)
        total = 0
        for write in outcome.writes:
            if write.content is not None:
                total += check_file_size(write.path, write.content, field=field)
        check_change_size(total, field=field)
        explicit = command.get("expected_sha256", UNSET)
        main_path = _command_path(command)
        for path, state in outcome.changed:
            current = state.sha256 if state is not None and state.exists else None
            if explicit is not UNSET and path == main_path:
                expected, known = explicit, True
            elif check_seen:
                known, expected = access.expected_sha256(path)
            else:
                known = False
            if known and expected != current:
                raise FileVersionConflict(path, expected_sha256=expected, current_sha256=current)

    @staticmethod
    def _check_read_version(access: FileAccess, reader: Reader, command: Mapping[str, Any]) -> None:
        """``FileVersionConflict`` when the file the command changes stands otherwise
        than the caller last read it (its ``expected_sha256``, or ``access.seen``)."""
        try:
            path = normalize(
                command.get("old_path" if command.get("command") == "rename" else "path")
            )
        except InvalidMemoryPath:
            return  # the command refuses the path in the tool's words
        explicit = command.get("expected_sha256", UNSET)
        if explicit is not UNSET:
            known, expected = True, explicit
        else:
            known, expected = access.expected_sha256(path)
        if not known:
            return
        state = reader.state(path)
        current = state.sha256 if state is not None and state.exists else None
        if expected != current:
            raise FileVersionConflict(path, expected_sha256=expected, current_sha256=current)

    @staticmethod
    def _change(
        access: FileAccess,
        compute: Callable[[Reader], Outcome],
        *,
        adds_paths: bool,
        path: str,
    ) -> tuple[Outcome, builtins.list[MemoryFileVersion]]:
        """Compute a change on what the access sees and write it (see the module
        docstring): the outcome and the versions written. Refusals of ``compute`` go
        through; ``ConcurrentFileChange`` after ``TRIES`` tries lost to other writers."""
        for attempt in range(TRIES):
            try:
                if attempt == TRIES - 1:
                    # The last try reads and computes in the transaction: on SQLite it
                    # holds the write lock, so no other writer can move what it read.
                    # The limits keep that work short.
                    with transaction.atomic():
                        if adds_paths:
                            lock_paths_of_agent(access.scope.agent_id)
                        reader = Reader(access)
                        outcome = compute(reader)
                        return outcome, write_versions(access, outcome.writes, read=reader)
                reader = Reader(access)
                outcome = compute(reader)
                with transaction.atomic():
                    if adds_paths:
                        lock_paths_of_agent(access.scope.agent_id)
                    if reader.still_stands():
                        return outcome, write_versions(access, outcome.writes, read=reader)
            except IntegrityError:
                continue
        raise ConcurrentFileChange(path)

    @staticmethod
    def _files(states: Sequence[FileState], *, with_content: bool) -> builtins.list[MemoryFile]:
        ids = [state.version_id for state in states]
        fields = ["id", "sha256", "author", "created_at"] + (["content"] if with_content else [])
        rows = {
            row["id"]: row for row in MemoryFileVersion.objects.filter(pk__in=ids).values(*fields)
        }
        files = []
        for state in states:
            row = rows.get(state.version_id)
            if row is None:
                continue
            files.append(
                MemoryFile(
                    path=state.path,
                    content=row.get("content"),
                    sha256=row["sha256"],
                    size=state.size,
                    version=state.sequence,
                    version_id=state.version_id,
                    scope=state.scope,
                    author=row["author"],
                    updated_at=row["created_at"],
                )
            )
        return files


def _command_path(command: Mapping[str, Any]) -> str:
    """The path a command is about, canonical when it can be (for messages)."""
    raw = command.get("old_path") if command.get("command") == "rename" else command.get("path")
    try:
        return normalize(raw)
    except InvalidMemoryPath:
        return str(raw)
