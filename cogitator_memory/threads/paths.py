"""Walking a branch from an entry toward the root.

A branch is read with a recursive CTE that follows ``parent_id`` through the primary-key
index, bounded by a step count, so reading the newest ``limit`` entries of a branch costs
O(limit) whatever the size of the thread. The same SQL runs on PostgreSQL and SQLite.
"""

from __future__ import annotations

from django.db import connections, router

from cogitator_memory.threads.models import Entry


def _tables() -> tuple[str, str, str]:
    opts = Entry._meta
    connection = connections[router.db_for_read(Entry)]
    quote = connection.ops.quote_name
    return (
        quote(opts.db_table),
        quote(opts.get_field("id").get_attname_column()[1] or "id"),
        quote(opts.get_field("parent").get_attname_column()[1] or "parent_id"),
    )


def walk_up(start_id: str, steps: int) -> list[Entry]:
    """The entry ``start_id`` and up to ``steps - 1`` of its ancestors, nearest first."""
    table, pk, parent = _tables()
    sql = (
        f"WITH RECURSIVE walk(entry_id, parent_id, depth) AS ("
        f" SELECT {pk}, {parent}, 0 FROM {table} WHERE {pk} = %s"
        f" UNION ALL"
        f" SELECT e.{pk}, e.{parent}, w.depth + 1 FROM {table} e"
        f" JOIN walk w ON e.{pk} = w.parent_id WHERE w.depth + 1 < %s"
        f") SELECT e.* FROM walk w JOIN {table} e ON e.{pk} = w.entry_id ORDER BY w.depth"
    )
    return list(Entry.objects.raw(sql, [start_id, steps]))


def walk_ids_until(start_id: str, target_id: str) -> list[str]:
    """Ids from ``start_id`` up toward the root, stopping at ``target_id`` if it is met."""
    table, pk, parent = _tables()
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
