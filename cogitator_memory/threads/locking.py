"""Locking a thread before changing it, and the caller's right to see it.

Every writer of a thread locks the thread's row first (``SELECT ... FOR UPDATE`` on
PostgreSQL; on SQLite the IMMEDIATE transaction already holds the database's write lock),
so writers of one thread queue in the database and what a writer checks stays true until
it commits. The scope check happens on the locked row: a thread the caller may not see
answers exactly as a missing one.
"""

from __future__ import annotations

from collections.abc import Iterable

from cogitator_memory.exceptions import EntryNotFound, ThreadNotFound
from cogitator_memory.grants import Grants
from cogitator_memory.jsondata import storable_text
from cogitator_memory.threads.models import Entry, Thread
from cogitator_memory.threads.selectors import visible_thread


def lock_thread(thread_id: str, *, grants: Grants | None = None) -> Thread:
    """The thread, locked until commit. Raises ``ThreadNotFound`` when it is missing or
    ``grants`` do not reach it."""
    return visible_thread(thread_id, grants, lock=True)


def lock_entry_thread(entry_id: str, *, grants: Grants | None = None) -> tuple[Thread, Entry]:
    """An entry and its thread, the thread locked until commit. Raises ``EntryNotFound``
    when the entry is missing (also when it went while the lock was awaited) or ``grants``
    may not see its thread."""
    thread_id = (
        Entry.objects.filter(pk=entry_id).values_list("thread_id", flat=True).first()
        if storable_text(entry_id)
        else None
    )
    if thread_id is None:
        raise EntryNotFound(str(entry_id))
    try:
        thread = lock_thread(thread_id, grants=grants)
    except ThreadNotFound as exc:
        raise EntryNotFound(entry_id) from exc
    entry = Entry.objects.filter(pk=entry_id, thread_id=thread_id).first()
    if entry is None:
        raise EntryNotFound(entry_id)
    return thread, entry


def lock_threads(thread_ids: Iterable[str]) -> list[str]:
    """Lock the rows of these threads until commit, in id order (so two lockers of the
    same threads never wait on each other), and return the ids of those that exist.
    Call inside a transaction; on SQLite the IMMEDIATE transaction holds the database's
    write lock already."""
    ids = sorted(set(thread_ids))
    if not ids:
        return []
    locked = Thread.objects.select_for_update(of=("self",)).filter(pk__in=ids).order_by("pk")
    return list(locked.values_list("pk", flat=True))
