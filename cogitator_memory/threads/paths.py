"""Walking a branch from an entry toward the root.

A branch is read with a recursive CTE that follows ``parent_id`` through the primary-key
index, bounded by a step count, so reading the newest ``limit`` entries of a branch costs
O(limit) whatever the size of the thread. The same SQL runs on PostgreSQL and SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from django.db import connections, router

from cogitator_memory.threads.models import Entry


def _tables() -> tuple[str, str, str, str]:
    """The entry table and its id, parent and seq columns, quoted."""
    opts = Entry._meta
    connection = connections[router.db_for_read(Entry)]
    quote = connection.ops.quote_name
    return (
        quote(opts.db_table),
        quote(opts.get_field("id").get_attname_column()[1] or "id"),
        quote(opts.get_field("parent").get_attname_column()[1] or "parent_id"),
        quote(opts.get_field("seq").get_attname_column()[1] or "seq"),
    )


def walk_up(start_id: str, steps: int, *, above_seq: int | None = None) -> list[Entry]:
    """The entry ``start_id`` and up to ``steps - 1`` of its ancestors, nearest first;
    with ``above_seq``, stopping before the first whose seq is that or less."""
    table, pk, parent, seq = _tables()
    start_above = f" AND {seq} > %s" if above_seq is not None else ""
    step_above = f" AND e.{seq} > %s" if above_seq is not None else ""
    sql = (
        f"WITH RECURSIVE walk(entry_id, parent_id, depth) AS ("
        f" SELECT {pk}, {parent}, 0 FROM {table} WHERE {pk} = %s{start_above}"
        f" UNION ALL"
        f" SELECT e.{pk}, e.{parent}, w.depth + 1 FROM {table} e"
        f" JOIN walk w ON e.{pk} = w.parent_id WHERE w.depth + 1 < %s{step_above}"
        f") SELECT e.* FROM walk w JOIN {table} e ON e.{pk} = w.entry_id ORDER BY w.depth"
    )
    params: list[object] = (
        [start_id, steps] if above_seq is None else [start_id, above_seq, steps, above_seq]
    )
    return list(Entry.objects.raw(sql, params))


def branch_chunks(
    thread_id: str, start_id: str | None, fork_seq: int | None, steps: Iterator[int]
) -> Iterator[list[Entry]]:
    """The entry ``start_id`` and its ancestors, nearest first, in chunks of the sizes
    ``steps`` gives (the last may be shorter).

    The thread's entries up to its first fork (``Thread.fork_seq``; all of them when it
    never forked) form one chain, each the parent of the next by seq: that part of the
    branch is read by seq through the (thread, seq) index, a window of seqs per chunk
    (another past each gap deleted entries left); the entries
    after the fork are walked from parent to parent. Every entry read by seq is checked
    to be the parent of the one before, so rows written around the services (a fork the
    thread does not know of) only cost a walk from where the chain breaks.
    """
    expected = start_id  # the entry the branch goes on with
    chained = True  # whether reading by seq is still worth trying
    for size in steps:
        if expected is None:
            return
        chunk: list[Entry] = []
        if fork_seq is not None or not chained:
            above = fork_seq if chained else None
            chunk = walk_up(expected, size, above_seq=above)
            if chunk:
                expected = chunk[-1].parent_id
            if len(chunk) == size or not chained or expected is None:
                if chunk:
                    yield chunk
                if len(chunk) < size:
                    return
                continue
        wanted = size - len(chunk)
        while wanted and expected is not None and chained:
            read = _seq_window(thread_id, expected, wanted)
            # Fewer rows than asked for while the branch goes on: a gap of deleted entries,
            # read past by the next window; none, or another entry than the one expected:
            # the chain is broken.
            chained = bool(read)
            for entry in read:
                if entry.pk != expected:
                    chained = False
                    break
                chunk.append(entry)
                expected = entry.parent_id
            wanted = size - len(chunk)
        if chunk:
            yield chunk


def _seq_window(thread_id: str, top_id: str, size: int) -> list[Entry]:
    """The thread's entries of the ``size`` seqs down from the one of ``top_id``, newest
    first: a window of seqs, not only an upper bound, so that whatever plan the database
    picks it reads at most ``size`` rows. With an upper bound alone, PostgreSQL reads and
    sorts every entry of the thread below it when its statistics do not know the thread
    (one written since the last ANALYZE looks small): a read proportional to the thread.
    Plain SQL, as ``walk_up``: it runs for every chunk of every branch read, and compiling
    it through the ORM costs more than running it."""
    table, pk, _, seq = _tables()
    thread = connections[router.db_for_read(Entry)].ops.quote_name(
        Entry._meta.get_field("thread").get_attname_column()[1] or "thread_id"
    )
    top = f"(SELECT u.{seq} FROM {table} u WHERE u.{pk} = %s)"
    sql = (
        f"SELECT {table}.* FROM {table} WHERE {table}.{thread} = %s"
        f" AND {table}.{seq} <= {top} AND {table}.{seq} > {top} - %s"
        f" ORDER BY {table}.{seq} DESC LIMIT %s"
    )
    return list(Entry.objects.raw(sql, [thread_id, top_id, top_id, size, size]))


def doubling(first: int, most: int) -> Iterator[int]:
    """Chunk sizes from ``first``, doubling up to ``most``."""
    size = max(1, first)
    while True:
        yield size
        size = min(max(most, size), size * 2)


def walk_ids_until(start_id: str, target_id: str) -> list[str]:
    """Ids from ``start_id`` up toward the root, stopping at ``target_id`` if it is met."""
    table, pk, parent, _ = _tables()
    sql = (
        f"WITH RECURSIVE walk(entry_id, parent_id) AS ("
        f" SELECT {pk}, {parent} FROM {table} WHERE {pk} = %s"
        f" UNION ALL"
        f" SELECT e.{pk}, e.{parent} FROM {table} e"
        f" JOIN walk w ON e.{pk} = w.parent_id WHERE w.entry_id <> %s"
        f") SELECT entry_id FROM walk"
    )
    connection = connections[router.db_for_read(Entry)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [start_id, target_id])
        return [row[0] for row in cursor.fetchall()]


def ids_down_to(start_id: str, lowest_seq: int) -> list[str]:
    """Ids from ``start_id`` up toward the root, while their seq is ``lowest_seq`` or
    more: one walk whose length is that stretch of the branch."""
    table, pk, parent, seq = _tables()
    sql = (
        f"WITH RECURSIVE walk(entry_id, parent_id) AS ("
        f" SELECT {pk}, {parent} FROM {table} WHERE {pk} = %s AND {seq} >= %s"
        f" UNION ALL"
        f" SELECT e.{pk}, e.{parent} FROM {table} e"
        f" JOIN walk w ON e.{pk} = w.parent_id WHERE e.{seq} >= %s"
        f") SELECT entry_id FROM walk"
    )
    connection = connections[router.db_for_read(Entry)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [start_id, lowest_seq, lowest_seq])
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class BranchEnd:
    """Where a branch ends (its leaf and the leaf's seq) and the thread's first fork."""

    leaf_id: str
    leaf_seq: int
    fork_seq: int | None


def branch_end(thread_id: str, leaf_id: str | None) -> BranchEnd | None:
    """The end of the branch ending at ``leaf_id`` (the thread's active leaf when None);
    None for a thread without it or a leaf of another thread."""
    from cogitator_memory.threads.models import Thread

    row = Thread.objects.filter(pk=thread_id).values_list("fork_seq", "active_leaf_id").first()
    if row is None:
        return None
    fork, active = row
    leaf = leaf_id if leaf_id is not None else active
    if leaf is None:
        return None
    leaf_seq = (
        Entry.objects.filter(pk=leaf, thread_id=thread_id).values_list("seq", flat=True).first()
    )
    return None if leaf_seq is None else BranchEnd(leaf, leaf_seq, fork)


def on_branch(
    thread_id: str,
    leaf_id: str | None,
    seqs: Mapping[str, int],
    *,
    end: BranchEnd | None = None,
) -> set[str]:
    """Which of the thread's entries ``seqs`` (id -> seq) are on the branch ending at
    ``leaf_id`` (the thread's active leaf when None): the leaf and its ancestors. ``end``
    (``branch_end`` of the same thread and leaf) spares reading it again.

    An entry no later than the thread's first fork (``Thread.fork_seq``) and than the leaf
    is on every branch through it, so only the entries after the fork cost a walk, and
    that walk goes from the leaf down to the oldest of them, not to the root.
    """
    if not seqs:
        return set()
    if end is None:
        end = branch_end(thread_id, leaf_id)
    if end is None:
        return set()
    sure = end.leaf_seq if end.fork_seq is None else min(end.fork_seq, end.leaf_seq)
    found = {entry_id for entry_id, seq in seqs.items() if seq <= sure}
    later = {entry_id: seq for entry_id, seq in seqs.items() if sure < seq <= end.leaf_seq}
    if later:
        walked = set(ids_down_to(end.leaf_id, min(later.values())))
        found.update(entry_id for entry_id in later if entry_id in walked)
    return found
