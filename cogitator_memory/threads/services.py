"""Writes of threads and entries.

Every service runs in one transaction and locks the thread row before it touches the
thread's entries (``threads/locking.py``), so writers of one thread queue in the database
and ``seq`` stays unique and gap-free. What stands on the entries a service removes or
redacts (their vectors, and as they come, items and summaries) goes in the same
transaction (``dependents.forget_entries``); so do copies of a thread's owner when it
changes. Signals go out after commit.

Each service takes an optional ``scope``: with one, a thread the caller may not see
answers as a missing one, and a change its grants do not reach raises ``NoGrant``
(``policy.py``). Trusted code passes none. Branch operations and redaction live in
``branches.py`` and ``redaction.py`` and are part of this module's public surface.
"""

from __future__ import annotations

import enum
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from cogitator_memory import dependents, policy, signals
from cogitator_memory.exceptions import (
    EntryNotInThread,
    ThreadAgentMismatch,
    ThreadAlreadyExists,
    ThreadIdUnavailable,
    ThreadNotFound,
)
from cogitator_memory.grants import Grants, thread_owner
from cogitator_memory.jsondata import storable_text
from cogitator_memory.threads.branches import checkout, fork_thread, rewind
from cogitator_memory.threads.entry_sql import (
    ParentState,
    entry_connection,
    insert_entry,
    locked_thread_state,
    mark_fork,
    parent_in_thread,
    statements,
)
from cogitator_memory.threads.locking import lock_entry_thread, lock_thread
from cogitator_memory.threads.models import Entry, EntryType, Role, Thread, new_entry_id
from cogitator_memory.threads.redaction import redact_entry
from cogitator_memory.threads.validation import (
    MAX_TOKEN_COUNT,
    validate_agent_id,
    validate_entry_fields,
    validate_metadata,
    validate_thread_id,
    validate_thread_metadata,
)
from cogitator_memory.tokens import count_entry_fields_tokens

__all__ = [
    "UNSET",
    "add_entry",
    "checkout",
    "clear_thread",
    "create_thread",
    "delete_entries",
    "delete_entry",
    "delete_thread",
    "fork_thread",
    "redact_entry",
    "rewind",
    "update_thread",
    "upsert_thread",
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


# --- threads ---------------------------------------------------------------------------


def create_thread(
    agent_id: str,
    metadata: dict[str, Any] | None = None,
    *,
    thread_id: str | None = None,
    grants: Grants | None = None,
) -> Thread:
    """Create a thread, or, with the id of an existing thread, update its metadata.

    An upsert keeps the thread's entries and ``created_at`` and merges ``metadata`` into
    the stored metadata. ``metadata.userId`` names the thread's user (``Thread.user_id``):
    absent or null for none, else a non-empty text. Raises ``InvalidInput`` for a bad id,
    agent or metadata, ``ThreadAgentMismatch`` when the existing thread belongs to another
    agent; with ``grants``, ``NoGrant`` for an agent or user the caller is not granted
    (checked before the id is looked up) and ``ThreadIdUnavailable`` for an id a thread
    the caller may not see holds.
    """
    thread, _created = upsert_thread(agent_id, metadata, thread_id=thread_id, grants=grants)
    return thread


def upsert_thread(
    agent_id: str,
    metadata: dict[str, Any] | None = None,
    *,
    thread_id: str | None = None,
    grants: Grants | None = None,
) -> tuple[Thread, bool]:
    """``create_thread``, also telling whether the thread was created (or updated)."""
    validate_agent_id(agent_id)
    clean_metadata = validate_thread_metadata(metadata)
    policy.require_create(grants, agent_id, clean_metadata)
    if thread_id is None:
        thread = Thread(agent_id=agent_id, metadata=clean_metadata)
        policy.require_write(grants, agent_id, thread_owner(thread.metadata))
        thread.save(force_insert=True)
        return thread, True
    validate_thread_id(thread_id)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                existing = Thread.objects.select_for_update().filter(pk=thread_id).first()
                if existing is None:
                    thread = Thread(id=thread_id, agent_id=agent_id, metadata=clean_metadata)
                    policy.require_write(grants, agent_id, thread_owner(thread.metadata))
                    thread.save(force_insert=True)
                    return thread, True
                if not policy.can_see(grants, existing.agent_id, existing.user_id):
                    raise ThreadIdUnavailable(thread_id)
                if existing.agent_id != agent_id:
                    raise ThreadAgentMismatch(thread_id, agent_id, existing.agent_id)
                return _merge_metadata(existing, clean_metadata, grants=grants), False
        except IntegrityError:
            # Another writer created the same id between our read and insert: update it.
            continue
    raise ThreadAlreadyExists(thread_id)


def _merge_metadata(
    thread: Thread,
    metadata: dict[str, Any],
    *,
    replace: bool = False,
    grants: Grants | None = None,
) -> Thread:
    """Merge (or replace) the metadata of a locked thread; a change of its user must stay
    within ``grants`` and carries the new owner to what is derived from the thread."""
    previous_owner = thread.user_id
    thread.metadata = metadata if replace else {**(thread.metadata or {}), **metadata}
    new_owner = thread_owner(thread.metadata)
    policy.require_write(grants, thread.agent_id, new_owner)
    thread.updated_at = timezone.now()
    thread.save(update_fields=["metadata", "updated_at"])
    if new_owner != previous_owner:
        dependents.owner_changed(thread.pk, thread.agent_id, new_owner)
    return thread


@transaction.atomic
def update_thread(
    thread_id: str,
    metadata: dict[str, Any],
    *,
    replace: bool = False,
    grants: Grants | None = None,
) -> Thread:
    """Merge ``metadata`` into the thread's metadata (or replace it) in one locked step.

    Two concurrent updates of different keys both survive. A new ``metadata.userId``
    moves the thread (and the copies of its owner kept with its vectors) to that user.
    Raises ``ThreadNotFound``, ``InvalidInput``; with ``grants``, ``NoGrant`` when the
    thread would move to a user the caller is not granted.
    """
    clean_metadata = validate_thread_metadata(metadata)
    thread = lock_thread(thread_id, grants=grants)
    return _merge_metadata(thread, clean_metadata, replace=replace, grants=grants)


@transaction.atomic
def delete_thread(thread_id: str, *, grants: Grants | None = None) -> None:
    """Delete a thread, all its entries and what stands on them. Raises
    ``ThreadNotFound``."""
    thread = lock_thread(thread_id, grants=grants)
    entry_ids = list(Entry.objects.of_thread(thread_id).values_list("id", flat=True))
    _forget(entry_ids)
    Thread.objects.filter(pk=thread.pk).update(active_leaf=None)
    Entry.objects.of_thread(thread_id).delete()
    Thread.objects.filter(pk=thread.pk).delete()
    transaction.on_commit(
        lambda: signals.thread_deleted.send(sender=Thread, thread_id=thread_id, entry_ids=entry_ids)
    )


@transaction.atomic
def clear_thread(thread_id: str, *, grants: Grants | None = None) -> Thread:
    """Delete every entry of a thread (and what stands on them) and keep the thread.
    Raises ``ThreadNotFound``."""
    thread = lock_thread(thread_id, grants=grants)
    entry_ids = list(Entry.objects.of_thread(thread_id).values_list("id", flat=True))
    _forget(entry_ids)
    thread.active_leaf = None
    thread.fork_seq = None
    Thread.objects.filter(pk=thread.pk).update(active_leaf=None, fork_seq=None)
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
    grants: Grants | None = None,
) -> Entry:
    """Add an entry to a thread and return it.

    Without ``parent_id`` the entry goes after the active leaf; ``parent_id`` writes on
    another branch (``None`` starts a new root). With ``activate`` (the default) the
    thread's active leaf moves to the new entry in the same transaction. ``token_count``
    defaults to the estimate of ``tokens.count_entry_fields_tokens``.

    Raises ``InvalidEntry`` (with every field error), ``ThreadNotFound`` (also for a
    thread ``grants`` do not reach) and ``EntryNotInThread`` for a parent of another thread.
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
    if not storable_text(thread_id):
        raise ThreadNotFound(str(thread_id))
    connection = entry_connection()
    sql = statements(connection)
    # One cursor for the three or four statements of the write.
    with connection.cursor() as cursor:
        state = locked_thread_state(cursor, sql, thread_id)
        if state is None or not policy.can_see(grants, state.agent_id, state.user_id):
            raise ThreadNotFound(thread_id)
        parent: ParentState | None
        if parent_id is UNSET:
            resolved_parent, parent = state.active_leaf_id, state.active_leaf
        elif parent_id is None:
            resolved_parent, parent = None, None
        elif storable_text(parent_id) and (
            parent := parent_in_thread(cursor, sql, parent_id, thread_id)
        ):
            resolved_parent = parent_id
        else:
            raise EntryNotInThread(str(parent_id), thread_id, field="parent_id")
        mark_fork(cursor, sql, state, parent, thread_id)
        entry = Entry(
            id=new_entry_id(),
            thread_id=thread_id,
            parent_id=resolved_parent,
            seq=state.last_seq + 1,
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
                else min(
                    MAX_TOKEN_COUNT,
                    count_entry_fields_tokens(
                        content=content,
                        name=name,
                        tool_calls=tool_calls,
                        tool_results=tool_results,
                        event=event,
                    ),
                )
            ),
            created_at=created_at or timezone.now(),
        )
        insert_entry(connection, cursor, sql, entry, activate=activate)
    dependents.entries_added([entry])
    transaction.on_commit(lambda: signals.entry_added.send(sender=Entry, entry=entry))
    return entry


def _note_fork_after_splice(thread: Thread, entry: Entry) -> None:
    """The children of a deleted entry moved to its parent (or became roots): a fork
    when the parent now has two children or more."""
    siblings = Entry.objects.filter(thread_id=thread.pk, parent_id=entry.parent_id)
    if siblings[:2].count() < 2:
        return
    fork = (
        Entry.objects.filter(pk=entry.parent_id).values_list("seq", flat=True).get()
        if entry.parent_id is not None
        else 0
    )
    Thread.objects.filter(pk=thread.pk).filter(
        Q(fork_seq__isnull=True) | Q(fork_seq__gt=fork)
    ).update(fork_seq=fork)


@transaction.atomic
def delete_entry(entry_id: str, *, grants: Grants | None = None) -> None:
    """Splice an entry out of its branch: its children move to its parent, and an
    active leaf on it moves to its parent. What stands on the entry goes with it.
    Raises ``EntryNotFound`` (also for an entry ``grants`` do not reach)."""
    thread, entry = lock_entry_thread(entry_id, grants=grants)
    dependents.forget_entries([entry.pk])
    moved = Entry.objects.filter(parent_id=entry.pk).update(parent_id=entry.parent_id)
    if moved:
        _note_fork_after_splice(thread, entry)
    if thread.active_leaf_id == entry.pk:
        Thread.objects.filter(pk=thread.pk).update(active_leaf_id=entry.parent_id)
    Entry.objects.filter(pk=entry.pk).delete()
    thread_id = thread.pk
    transaction.on_commit(
        lambda: signals.entry_deleted.send(sender=Entry, entry_id=entry_id, thread_id=thread_id)
    )


# Ids per statement of a many-entry change (SQLite bounds the parameters of one).
IDS_PER_STATEMENT = 500


# Entry ids per call of the dependents: a thread of any length is forgotten in calls
# each of whose statements stays within SQLite's bound on parameters.
IDS_PER_FORGET = 5000


def _chunks(ids: Sequence[str], size: int = IDS_PER_STATEMENT) -> Iterator[list[str]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _forget(entry_ids: Sequence[str]) -> dependents.Forgotten:
    """``dependents.forget_entries`` for any number of entries, in chunks."""
    forgotten = dependents.Forgotten()
    for chunk in _chunks(entry_ids, IDS_PER_FORGET):
        forgotten.update(dependents.forget_entries(chunk))
    return forgotten


@transaction.atomic
def delete_entries(
    thread_id: str, entry_ids: Iterable[str], *, grants: Grants | None = None
) -> dependents.Forgotten:
    """Splice many entries of one thread out in one step (``delete_entry`` for each,
    in one transaction and a few statements).

    Each child of a deleted entry that stays moves to its nearest ancestor that stays (or
    becomes a root), and an active leaf on a deleted entry moves the same way. What stands
    on the entries goes in the same transaction; returns what the dependents took out.
    Ids of entries of other threads, or gone already, are skipped. Raises
    ``ThreadNotFound`` (also for a thread ``grants`` do not reach).
    """
    thread = lock_thread(thread_id, grants=grants)
    wanted = list(dict.fromkeys(entry_ids))
    parents: dict[str, str | None] = {}
    for chunk in _chunks(wanted):
        parents.update(
            Entry.objects.filter(thread_id=thread.pk, pk__in=chunk).values_list("pk", "parent_id")
        )
    if not parents:
        return dependents.Forgotten()
    gone = list(parents)
    forgotten = _forget(gone)

    def survivor(entry_id: str | None) -> str | None:
        while entry_id is not None and entry_id in parents:
            entry_id = parents[entry_id]
        return entry_id

    moved: dict[str | None, list[str]] = defaultdict(list)
    for chunk in _chunks(gone):
        children = Entry.objects.filter(parent_id__in=chunk).values_list("pk", "parent_id")
        for child_id, parent_id in children:
            if child_id not in parents:
                moved[survivor(parent_id)].append(child_id)
    for new_parent, children_ids in moved.items():
        Entry.objects.filter(pk__in=children_ids).update(parent_id=new_parent)
    _note_forks_after_splice(thread, [parent for parent in moved])
    if thread.active_leaf_id in parents:
        Thread.objects.filter(pk=thread.pk).update(active_leaf_id=survivor(thread.active_leaf_id))
    for chunk in _chunks(gone):
        Entry.objects.filter(pk__in=chunk).delete()
    deleted_from = thread.pk

    def announce() -> None:
        for entry_id in gone:
            signals.entry_deleted.send(sender=Entry, entry_id=entry_id, thread_id=deleted_from)

    transaction.on_commit(announce)
    return forgotten


def _note_forks_after_splice(thread: Thread, parents: Sequence[str | None]) -> None:
    """Children moved to these parents (None: they became roots): the thread's first fork
    is the earliest of them that now has two children or more, if earlier than the one
    it knew."""
    forks: list[int] = []
    for parent_id in parents:
        if Entry.objects.filter(thread_id=thread.pk, parent_id=parent_id)[:2].count() < 2:
            continue
        if parent_id is None:
            forks.append(0)
        else:
            forks.append(Entry.objects.filter(pk=parent_id).values_list("seq", flat=True).get())
    if forks:
        fork = min(forks)
        Thread.objects.filter(pk=thread.pk).filter(
            Q(fork_seq__isnull=True) | Q(fork_seq__gt=fork)
        ).update(fork_seq=fork)
