"""Upkeep of the database after a cascade.

``vacuum_tables`` runs ``VACUUM (ANALYZE)`` on tables of the app on PostgreSQL, sent by a
cascade over a user once it committed (``Work.VACUUM_TABLES``): the rows it deleted are
dead tuples until a vacuum, which autovacuum may run much later on a large table. Only
the app's own tables (and the admin log's) are vacuumed, whatever the message names. Safe
to run again: a vacuum of a vacuumed table finds nothing to do.
"""

from __future__ import annotations

import logging
from typing import Any

from django.apps import apps
from django.db import connections, router

from cogitator_memory import background
from cogitator_memory.background import Work
from cogitator_memory.tasks.retries import retried_task
from cogitator_memory.threads.models import Thread

logger = logging.getLogger(__name__)

__all__ = ["vacuum_tables"]


def _known_tables() -> set[str]:
    tables = {
        model._meta.db_table for model in apps.get_app_config("cogitator_memory").get_models()
    }
    if apps.is_installed("django.contrib.admin"):
        from django.contrib.admin.models import LogEntry

        tables.add(LogEntry._meta.db_table)
    return tables


@retried_task(ignore_result=True)
def vacuum_tables(tables: list[str]) -> dict[str, Any]:
    """``VACUUM (ANALYZE)`` each of these tables of the app (PostgreSQL; elsewhere, or
    inside a transaction, nothing). Returns the tables vacuumed."""
    connection = connections[router.db_for_write(Thread)]
    if connection.vendor != "postgresql":
        return {"vacuumed": []}
    if connection.in_atomic_block:
        # VACUUM cannot run in a transaction (a task run eagerly inside one).
        logger.info("Not vacuuming %s: inside a transaction.", ", ".join(tables))
        return {"vacuumed": []}
    known = _known_tables()
    done = []
    with connection.cursor() as cursor:
        # A vacuum of a large table may take longer than the statement timeout the
        # project sets for requests; this session's is lifted for it alone.
        cursor.execute("SET statement_timeout = 0")
        try:
            for table in sorted(set(tables) & known):
                cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(table)}")
                done.append(table)
        finally:
            cursor.execute("RESET statement_timeout")
    return {"vacuumed": done}


background.offer(Work.VACUUM_TABLES, vacuum_tables)
