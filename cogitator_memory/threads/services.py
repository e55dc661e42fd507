"""Writes of threads and entries.

Every service runs in one transaction and locks the thread row before it touches the
thread's entries, so writers of one thread queue in the database (the row lock on
PostgreSQL; the database lock of an IMMEDIATE transaction on SQLite) and ``seq`` stays
unique and gap-free. Signals go out after commit.
"""

from __future__ import annotations

import enum
import json
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from cogitator_memory import signals
from cogitator_memory.exceptions import (
    EntryNotFound,
    EntryNotInThread,
    InvalidInput,
    NotOnActiveBranch,
    RedactionRefused,
    ThreadAgentMismatch,
    ThreadAlreadyExists,
    ThreadNotFound,
)
from cogitator_memory.threads.entry_sql import (
    entry_connection,
    insert_entry,
    locked_thread_state,
    parent_is_in_thread,
    statements,
)
from cogitator_memory.threads.models import (
    FORK_OF_KEY,
    FORKED_FROM_KEY,
    FORKS_KEY,
    PAUSED_RUN_KEY,
    REDACTED_KEY,
    REDACTED_TEXT,
    Entry,
    EntryType,
    Role,
    Thread,
    new_entry_id,
)
from cogitator_memory.threads.paths import walk_ids_until, walk_up
from cogitator_memory.threads.selectors import entry_in_thread
from cogitator_memory.threads.validation import (
    validate_agent_id,
    validate_entry_fields,
    validate_metadata,
    validate_text,
    validate_thread_id,
)
from cogitator_memory.tokens import count_entry_fields_tokens, count_entry_tokens

__all__ = [
    "UNSET",
    "add_entry",
    "checkout",
    "clear_thread",
    "create_thread",
    "delete_entry",
    "delete_thread",
    "fork_thread",
    "redact_entry",
    "rewind",
    "update_thread",
]


class _Unset(enum.Enum):
    UNSET = enum.auto()


UNSET = _Unset.UNSET
"""Default of ``add_entry(parent_id=...)``: after the active leaf."""


def _json_copy(value: Any) -> Any:
    """A copy sharing nothing with the caller's object (the value is known to be JSON)."""
    if value is None or isinstance(value, str | int | float):
        return value  # immutable: nothing to share
    return json.loads(json.dumps(value))


def _lock_thread(thread_id: str) -> Thread:
    thread = Thread.objects.select_for_update().filter(pk=thread_id).first()
    if thread is None:
        raise ThreadNotFound(thread_id)
    return thread


# --- threads ---------------------------------------------------------------------------


def create_thread(
    agent_id: str,
    metadata: dict[str, Any] | None = None,
    *,
    thread_id: str | None = None,
) -> Thread:
    """Create a thread, or, with the id of an existing thread, update its metadata.

    An upsert keeps the thread's entries and ``created_at`` and merges ``metadata`` into
    the stored metadata. Raises ``InvalidInput`` for a bad id, agent or metadata and
    ``ThreadAgentMismatch`` when the existing thread belongs to another agent.
    """
    validate_agent_id(agent_id)
    clean_metadata = validate_metadata(metadata)
    if thread_id is None:
        thread = Thread.objects.create(agent_id=agent_id, metadata=clean_metadata)
        return thread
    validate_thread_id(thread_id)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                existing = Thread.objects.select_for_update().filter(pk=thread_id).first()
                if existing is None:
                    return Thread.objects.create(
                        id=thread_id, agent_id=agent_id, metadata=clean_metadata
                    )
                if existing.agent_id != agent_id:
                    raise ThreadAgentMismatch(thread_id, agent_id, existing.agent_id)
                return _merge_metadata(existing, clean_metadata)
        except IntegrityError:
            # Another writer created the same id between our read and insert: update it.
            continue
    raise ThreadAlreadyExists(thread_id)


def _merge_metadata(thread: Thread, metadata: dict[str, Any], *, replace: bool = False) -> Thread:
    thread.metadata = metadata if replace else {**(thread.metadata or {}), **metadata}
    thread.updated_at = timezone.now()
    thread.save(update_fields=["metadata", "updated_at"])
    return thread


@transaction.atomic
def update_thread(thread_id: str, metadata: dict[str, Any], *, replace: bool = False) -> Thread:
    """Merge ``metadata`` into the thread's metadata (or replace it) in one locked step.

    Two concurrent updates of different keys both survive. Raises ``ThreadNotFound``.
    """
    clean_metadata = validate_metadata(metadata)
    return _merge_metadata(_lock_thread(thread_id), clean_metadata, replace=replace)


@transaction.atomic
def delete_thread(thread_id: str) -> None:
    """Delete a thread and all its entries. Raises ``ThreadNotFound``."""
    thread = _lock_thread(thread_id)
    entry_ids = list(Entry.objects.of_thread(thread_id).values_list("id", flat=True))
    Thread.objects.filter(pk=thread.pk).update(active_leaf=None)
    Entry.objects.of_thread(thread_id).delete()
    Thread.objects.filter(pk=thread.pk).delete()
    transaction.on_commit(
        lambda: signals.thread_deleted.send(sender=Thread, thread_id=thread_id, entry_ids=entry_ids)
    )


@transaction.atomic
def clear_thread(thread_id: str) -> Thread:
    """Delete every entry of a thread and keep the thread. Raises ``ThreadNotFound``."""
    thread = _lock_thread(thread_id)
    entry_ids = list(Entry.objects.of_thread(thread_id).values_list("id", flat=True))
    thread.active_leaf = None
    thread.save(update_fields=["active_leaf"])
    Entry.objects.of_thread(thread_id).delete()
    transaction.on_commit(
        lambda: signals.thread_cleared.send(sender=Thread, thread_id=thread_id, entry_ids=entry_ids)
    )
    return thread


# --- entries ---------------------------------------------------------------------------


@transaction.atomic
def add_entry(
    thread_id: str,
    *,
    type: str = EntryType.MESSAGE,
    role: str | None = None,
    content: str | list[Any] | None = None,
    name: str | None = None,
    tool_call_id: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_results: list[dict[str, Any]] | None = None,
    event: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    token_count: int | None = None,
    created_at: datetime | None = None,
    parent_id: str | _Unset | None = UNSET,
    activate: bool = True,
) -> Entry:
    """Add an entry to a thread and return it.

    Without ``parent_id`` the entry goes after the active leaf; ``parent_id`` writes on
    another branch (``None`` starts a new root). With ``activate`` (the default) the
    thread's active leaf moves to the new entry in the same transaction. ``token_count``
    defaults to the estimate of ``tokens.count_entry_fields_tokens``.

    Raises ``InvalidEntry`` (with every field error), ``ThreadNotFound`` and
    ``EntryNotInThread`` for a parent of another thread.
    """
    type = str(type) if isinstance(type, EntryType) else type
    if type == EntryType.TOOL_RESULT and role is None:
        role = Role.TOOL
    validate_entry_fields(
        type=type,
        role=role,
        content=content,
        name=name,
        tool_call_id=tool_call_id,
        tool_calls=tool_calls,
        tool_results=tool_results,
        event=event,
        metadata=metadata,
        token_count=token_count,
        created_at=created_at,
    )
    connection = entry_connection()
    sql = statements(connection)
    # One cursor for the three or four statements of the write.
    with connection.cursor() as cursor:
        state = locked_thread_state(cursor, sql, thread_id)
        if state is None:
            raise ThreadNotFound(thread_id)
        last_seq, active_leaf_id = state
        if parent_id is UNSET:
            resolved_parent = active_leaf_id
        elif parent_id is None:
            resolved_parent = None
        elif isinstance(parent_id, str) and parent_is_in_thread(cursor, sql, parent_id, thread_id):
            resolved_parent = parent_id
        else:
            raise EntryNotInThread(str(parent_id), thread_id, field="parent_id")
        entry = Entry(
            id=new_entry_id(),
            thread_id=thread_id,
            parent_id=resolved_parent,
            seq=last_seq + 1,
            type=type,
            role=role,
            content=_json_copy(content),
            name=name,
            tool_call_id=tool_call_id,
            tool_calls=_json_copy(tool_calls),
            tool_results=_json_copy(tool_results),
            event=_json_copy(event),
            metadata=validate_metadata(metadata) if metadata is not None else None,
            token_count=(
                token_count
                if token_count is not None
                else count_entry_fields_tokens(
                    content=content,
                    name=name,
                    tool_calls=tool_calls,
                    tool_results=tool_results,
                    event=event,
                )
            ),
            created_at=created_at or timezone.now(),
        )
        insert_entry(connection, cursor, sql, entry, activate=activate)
    transaction.on_commit(lambda: signals.entry_added.send(sender=Entry, entry=entry))
    return entry


@transaction.atomic
def delete_entry(entry_id: str) -> None:
    """Splice an entry out of its branch: its children move to its parent, and an
    active leaf on it moves to its parent. Raises ``EntryNotFound``."""
    thread_id = Entry.objects.filter(pk=entry_id).values_list("thread_id", flat=True).first()
    if thread_id is None:
        raise EntryNotFound(entry_id)
    thread = _lock_thread(thread_id)
    entry = Entry.objects.filter(pk=entry_id).first()
    if entry is None:
        raise EntryNotFound(entry_id)
    Entry.objects.filter(parent_id=entry.pk).update(parent_id=entry.parent_id)
    if thread.active_leaf_id == entry.pk:
        Thread.objects.filter(pk=thread_id).update(active_leaf_id=entry.parent_id)
    Entry.objects.filter(pk=entry.pk).delete()
    transaction.on_commit(
        lambda: signals.entry_deleted.send(sender=Entry, entry_id=entry_id, thread_id=thread_id)
    )


def _redacted_tool_calls(tool_calls: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if tool_calls is None:
        return None
    # Only the call's identity survives; arguments, replay state and argument errors go.
    kept_keys = ("id", "name", "type")
    return [
        {**{key: call[key] for key in kept_keys if key in call}, "arguments": REDACTED_TEXT}
        for call in tool_calls
    ]


def _redacted_tool_results(
    tool_results: list[dict[str, Any]] | None,
) -> list[dict[str, Any]] | None:
    if tool_results is None:
        return None
    kept_keys = ("callId", "call_id", "tool_call_id", "name")
    return [
        {**{key: result[key] for key in kept_keys if key in result}, "result": REDACTED_TEXT}
        for result in tool_results
    ]


@transaction.atomic
def redact_entry(
    entry_id: str, *, at: datetime | None = None, reason: str | None = None
) -> Entry | None:
    """Replace what an entry said with ``[redacted]`` and keep its place in the tree.

    The text of a message or tool_result, the arguments of its tool calls and the results
    of its tools become ``[redacted]``; its parent, seq, role and call ids stay; a user
    message loses its sender name; ``metadata.redacted`` and ``redaction`` record when
    and why. Returns None for a missing entry; raises ``RedactionRefused`` for a session
    event (events are deleted, not redacted).
    """
    validate_text(reason, "reason", max_length=1000)
    if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
        raise InvalidInput({"at": "at must be a datetime with a time zone."})
    thread_id = Entry.objects.filter(pk=entry_id).values_list("thread_id", flat=True).first()
    if thread_id is None:
        return None
    _lock_thread(thread_id)
    entry = Entry.objects.filter(pk=entry_id).first()
    if entry is None:
        return None
    if entry.is_event:
        raise RedactionRefused(entry_id, entry.type)
    moment = at or timezone.now()
    redaction: dict[str, Any] = {"at": moment.isoformat()}
    if reason:
        redaction["reason"] = reason
    entry.content = REDACTED_TEXT
    entry.tool_calls = _redacted_tool_calls(entry.tool_calls)
    entry.tool_results = _redacted_tool_results(entry.tool_results)
    if entry.role == Role.USER:
        entry.name = None
    entry.metadata = {**(entry.metadata or {}), REDACTED_KEY: redaction}
    entry.redaction = redaction
    entry.token_count = count_entry_tokens(entry)
    entry.save(
        update_fields=[
            "content",
            "tool_calls",
            "tool_results",
            "name",
            "metadata",
            "redaction",
            "token_count",
        ]
    )
    transaction.on_commit(lambda: signals.entry_redacted.send(sender=Entry, entry=entry))
    return entry


# --- branches --------------------------------------------------------------------------


@transaction.atomic
def rewind(thread_id: str, to_entry_id: str) -> Thread:
    """Move the active leaf back to an entry of the active branch; nothing is deleted.

    The entries after it stay on a branch of their own. Raises ``ThreadNotFound``,
    ``EntryNotInThread`` and ``NotOnActiveBranch`` (use ``checkout`` to switch branches).
    """
    thread = _lock_thread(thread_id)
    target = entry_in_thread(to_entry_id, thread_id, field="to_entry_id")
    if thread.active_leaf_id == target.pk:
        return thread
    if thread.active_leaf_id is None or target.pk not in walk_ids_until(
        thread.active_leaf_id, target.pk
    ):
        raise NotOnActiveBranch(target.pk, thread_id)
    thread.active_leaf = target
    thread.save(update_fields=["active_leaf"])
    return thread


@transaction.atomic
def checkout(thread_id: str, entry_id: str) -> Thread:
    """Make the branch that ends at ``entry_id`` the active one.

    Raises ``ThreadNotFound`` and ``EntryNotInThread``.
    """
    thread = _lock_thread(thread_id)
    target = entry_in_thread(entry_id, thread_id, field="entry_id")
    if thread.active_leaf_id != target.pk:
        thread.active_leaf = target
        thread.save(update_fields=["active_leaf"])
    return thread


@transaction.atomic
def fork_thread(thread_id: str, at_entry_id: str, new_thread_id: str | None = None) -> Thread:
    """Copy the branch from the root up to ``at_entry_id`` into a new thread.

    Each copy names its original in ``metadata.forkOf``; the new thread names its origin
    in ``metadata.forkedFrom`` (``{"threadId", "entryId"}``) and the origin lists the new
    thread in ``metadata.memoryForks``. A paused run of the origin (``metadata.pausedRun``)
    is not copied. Raises ``ThreadNotFound``, ``EntryNotInThread``, ``InvalidInput`` for
    a bad new id and ``ThreadAlreadyExists``.
    """
    if new_thread_id is not None:
        validate_thread_id(new_thread_id, field="new_thread_id")
    origin = _lock_thread(thread_id)
    at = entry_in_thread(at_entry_id, thread_id, field="at_entry_id")
    if new_thread_id is not None and Thread.objects.filter(pk=new_thread_id).exists():
        raise ThreadAlreadyExists(new_thread_id)

    branch: list[Entry] = []
    cursor: str | None = at.pk
    while cursor is not None:
        step = walk_up(cursor, 1024)
        branch.extend(step)
        cursor = step[-1].parent_id if step else None
    branch.reverse()

    metadata = {
        key: value
        for key, value in (origin.metadata or {}).items()
        if key not in (FORKS_KEY, FORKED_FROM_KEY, PAUSED_RUN_KEY)
    }
    metadata[FORKED_FROM_KEY] = {"threadId": origin.pk, "entryId": at.pk}
    fork = Thread(agent_id=origin.agent_id, metadata=metadata)
    if new_thread_id is not None:
        fork.id = new_thread_id
    try:
        with transaction.atomic():
            fork.save(force_insert=True)
    except IntegrityError as exc:
        raise ThreadAlreadyExists(fork.pk) from exc

    copies: list[Entry] = []
    copied_ids: dict[str, str] = {}
    for seq, original in enumerate(branch, start=1):
        copy = Entry(
            id=new_entry_id(),
            thread_id=fork.pk,
            parent_id=copied_ids.get(original.parent_id) if original.parent_id else None,
            seq=seq,
            type=original.type,
            role=original.role,
            content=original.content,
            name=original.name,
            tool_call_id=original.tool_call_id,
            tool_calls=original.tool_calls,
            tool_results=original.tool_results,
            event=original.event,
            metadata={**(original.metadata or {}), FORK_OF_KEY: original.pk},
            token_count=original.token_count,
            created_at=original.created_at,
            redaction=original.redaction,
        )
        copied_ids[original.pk] = copy.pk
        copies.append(copy)
    Entry.objects.bulk_create(copies, batch_size=500)
    Thread.objects.filter(pk=fork.pk).update(
        next_seq=len(copies), active_leaf_id=copies[-1].pk if copies else None
    )
    fork.refresh_from_db()

    forks = list((origin.metadata or {}).get(FORKS_KEY) or [])
    forks.append(fork.pk)
    _merge_metadata(origin, {FORKS_KEY: forks})

    def announce() -> None:
        for copy in copies:
            signals.entry_added.send(sender=Entry, entry=copy)

    transaction.on_commit(announce)
    return fork
