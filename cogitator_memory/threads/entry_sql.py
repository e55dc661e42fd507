"""The statements of ``add_entry``, sent as SQL through the model fields' own adapters.

``add_entry`` is the hottest write of the app (every turn of every conversation). Built
through the ORM it spends most of its time compiling three queries and building a model
instance for the locked thread row, several times what the database needs
(bench/RESULTS.md, "Where add_entry's time goes"). These statements are compiled once
per database connection vendor and carry values converted by each field's
``get_db_prep_save``, exactly as ``Model.save`` would, so both paths store the same data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper

from cogitator_memory.threads.models import Entry, Thread


@dataclass(frozen=True)
class EntrySQL:
    lock_thread: str
    parent_in_thread: str
    mark_fork: str
    insert_entry: str
    advance_thread: str
    advance_thread_and_leaf: str
    entry_fields: tuple[Any, ...]
    preparers: tuple[Callable[[Any, Any, BaseDatabaseWrapper], Any], ...]


def _column(model: type[Any], name: str) -> str:
    column = model._meta.get_field(name).column
    assert isinstance(column, str)
    return column


def _as_is(value: Any, field: Any, connection: BaseDatabaseWrapper) -> Any:
    return value


def _by_field(value: Any, field: Any, connection: BaseDatabaseWrapper) -> Any:
    return field.get_db_prep_save(value, connection)


# Texts and whole numbers reach the driver as they are; every other field (JSON, times)
# goes through its own adapter, as Model.save() sends it.
PLAIN_FIELD_TYPES = frozenset(
    {"CharField", "ForeignKey", "PositiveBigIntegerField", "PositiveIntegerField"}
)


def _preparer(field: Any) -> Callable[[Any, Any, BaseDatabaseWrapper], Any]:
    return _as_is if field.get_internal_type() in PLAIN_FIELD_TYPES else _by_field


@lru_cache(maxsize=8)
def _statements(vendor: str, lock_clause: str, quote_key: str) -> EntrySQL:
    connection = connections[quote_key]
    quote = connection.ops.quote_name
    thread_table = quote(Thread._meta.db_table)
    entry_table = quote(Entry._meta.db_table)
    thread_id = quote(_column(Thread, "id"))
    next_seq = quote(_column(Thread, "next_seq"))
    leaf = quote(_column(Thread, "active_leaf"))
    agent = quote(_column(Thread, "agent_id"))
    owner = quote(_column(Thread, "user_id"))
    fork = quote(_column(Thread, "fork_seq"))
    entry_id = quote(_column(Entry, "id"))
    entry_thread = quote(_column(Entry, "thread"))
    entry_parent = quote(_column(Entry, "parent"))
    entry_seq = quote(_column(Entry, "seq"))
    # The seq of an entry and whether it has a child already: a new child makes it a fork.
    # Both through indexes (the primary key, the parent's), in the statement that reads
    # the entry anyway.
    leaf_seq = f"(SELECT p.{entry_seq} FROM {entry_table} p WHERE p.{entry_id} = t.{leaf})"
    leaf_has_child = f"(SELECT 1 FROM {entry_table} c WHERE c.{entry_parent} = t.{leaf} LIMIT 1)"
    fields = tuple(Entry._meta.concrete_fields)
    columns = ", ".join(quote(str(field.column)) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    return EntrySQL(
        lock_thread=(
            f"SELECT t.{next_seq}, t.{leaf}, t.{agent}, t.{owner}, t.{fork}, {leaf_seq},"
            f" {leaf_has_child} FROM {thread_table} t"
            f" WHERE t.{thread_id} = %s{lock_clause}"
        ),
        parent_in_thread=(
            f"SELECT p.{entry_seq}, (SELECT 1 FROM {entry_table} c"
            f" WHERE c.{entry_parent} = p.{entry_id} LIMIT 1)"
            f" FROM {entry_table} p WHERE p.{entry_id} = %s AND p.{entry_thread} = %s"
        ),
        mark_fork=(
            f"UPDATE {thread_table} SET {fork} = %s WHERE {thread_id} = %s"
            f" AND ({fork} IS NULL OR {fork} > %s)"
        ),
        insert_entry=f"INSERT INTO {entry_table} ({columns}) VALUES ({placeholders})",
        advance_thread=f"UPDATE {thread_table} SET {next_seq} = %s WHERE {thread_id} = %s",
        advance_thread_and_leaf=(
            f"UPDATE {thread_table} SET {next_seq} = %s, {leaf} = %s WHERE {thread_id} = %s"
        ),
        entry_fields=fields,
        preparers=tuple(_preparer(field) for field in fields),
    )


def entry_connection() -> BaseDatabaseWrapper:
    return connections[router.db_for_write(Entry)]


def statements(connection: BaseDatabaseWrapper) -> EntrySQL:
    # A row lock where the database has one; SQLite's IMMEDIATE transaction already holds
    # the database's write lock.
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return _statements(connection.vendor, lock, connection.alias)


@dataclass(frozen=True)
class ParentState:
    """An entry a new entry is added under: its seq, and whether it has a child already."""

    seq: int
    has_child: bool


@dataclass(frozen=True)
class LockedThread:
    """What add_entry reads of the thread row it locks, and of its active leaf."""

    last_seq: int
    active_leaf_id: str | None
    agent_id: str
    user_id: str | None
    fork_seq: int | None
    active_leaf: ParentState | None


def locked_thread_state(cursor: Any, sql: EntrySQL, thread_id: str) -> LockedThread | None:
    """The thread's last seq, active leaf and owner, locked until commit; None if missing."""
    cursor.execute(sql.lock_thread, [thread_id])
    row = cursor.fetchone()
    if row is None:
        return None
    leaf = ParentState(int(row[5]), row[6] is not None) if row[5] is not None else None
    fork = int(row[4]) if row[4] is not None else None
    return LockedThread(int(row[0]), row[1], row[2], row[3], fork, leaf)


def parent_in_thread(
    cursor: Any, sql: EntrySQL, parent_id: str, thread_id: str
) -> ParentState | None:
    """The entry ``parent_id`` of the thread, or None when the thread has no such entry."""
    cursor.execute(sql.parent_in_thread, [parent_id, thread_id])
    row = cursor.fetchone()
    return ParentState(int(row[0]), row[1] is not None) if row is not None else None


def mark_fork(
    cursor: Any, sql: EntrySQL, state: LockedThread, parent: ParentState | None, thread_id: str
) -> None:
    """Record the fork a new child of ``parent`` (None: a new root) makes, if it does:
    a parent that has a child already, or a second root. Keeps the earliest fork."""
    if parent is None:
        # A second root, unless the thread was cleared (or never written).
        fork = (
            0 if state.last_seq > 0 and Entry.objects.filter(thread_id=thread_id).exists() else None
        )
    else:
        fork = parent.seq if parent.has_child else None
    if fork is not None and (state.fork_seq is None or fork < state.fork_seq):
        cursor.execute(sql.mark_fork, [fork, thread_id, fork])


def insert_entry(
    connection: BaseDatabaseWrapper, cursor: Any, sql: EntrySQL, entry: Entry, *, activate: bool
) -> None:
    """Insert the entry and advance the thread's seq (and leaf) in the open transaction."""
    values = [
        prepare(getattr(entry, field.attname), field, connection)
        for field, prepare in zip(sql.entry_fields, sql.preparers, strict=True)
    ]
    cursor.execute(sql.insert_entry, values)
    if activate:
        cursor.execute(sql.advance_thread_and_leaf, [entry.seq, entry.pk, entry.thread_id])
    else:
        cursor.execute(sql.advance_thread, [entry.seq, entry.thread_id])
    # The instance now mirrors a stored row, as after Model.save().
    entry._state.adding = False
    entry._state.db = connection.alias
