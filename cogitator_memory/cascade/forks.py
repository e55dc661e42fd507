"""Copies of entries in forks, followed through forks of forks.

``fork_thread`` (``threads/branches.py``) lists each fork in its origin's
``metadata.memoryForks`` and has each copy name its original in ``metadata.forkOf``. The
forks of a thread are read from its own row (a primary-key lookup), and the copies of
entries within one fork by their ``forkOf`` among that fork's entries (the thread's
index), so following forks costs what the forks hold, never a scan of every thread.
"""

from __future__ import annotations

from collections.abc import Iterable

from cogitator_memory.cascade.replies import EntryRow, entry_rows
from cogitator_memory.threads.models import FORK_OF_KEY, FORKS_KEY, Entry, Thread

__all__ = ["copies_in", "forks_of"]


def forks_of(thread_id: str) -> list[str]:
    """The ids of the threads forked from this one that still stand."""
    metadata = Thread.objects.filter(pk=thread_id).values_list("metadata", flat=True).first()
    listed = (metadata or {}).get(FORKS_KEY) if isinstance(metadata, dict) else None
    if not isinstance(listed, list):
        return []
    wanted = [fork for fork in dict.fromkeys(listed) if isinstance(fork, str) and fork]
    found = set(Thread.objects.filter(pk__in=wanted).values_list("pk", flat=True))
    return [fork for fork in wanted if fork in found and fork != thread_id]


def copies_in(fork_id: str, original_ids: Iterable[str]) -> list[EntryRow]:
    """The entries of the fork that are copies of these entries (one read of the fork's
    entries, by its thread index)."""
    originals = set(original_ids)
    if not originals:
        return []
    marked = Entry.objects.filter(thread_id=fork_id).values_list("pk", f"metadata__{FORK_OF_KEY}")
    copies = [
        pk
        for pk, original in marked.iterator()
        if isinstance(original, str) and original in originals
    ]
    return entry_rows(copies, thread_id=fork_id)
