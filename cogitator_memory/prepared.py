"""Whether a database connection prepares statements on the server.

On PostgreSQL psycopg prepares a statement after ``prepare_threshold`` runs on a
connection, read from the database's ``OPTIONS``; Django leaves it None (nothing prepared),
as a pooler in transaction mode needs. The hot writes (an item's slot read and insert, a
keyword document's postings) bind their parameters on the server only where it is set.
"""

from __future__ import annotations

from typing import Any

__all__ = ["prepares_statements"]


def prepares_statements(connection: Any) -> bool:
    """Whether ``connection`` (a Django connection) prepares statements: PostgreSQL with a
    ``prepare_threshold``. Opens the connection if it is not open yet."""
    if connection.vendor != "postgresql":
        return False
    connection.ensure_connection()
    return connection.connection.prepare_threshold is not None
