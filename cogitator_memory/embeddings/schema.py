"""The native pgvector column of embeddings, where PostgreSQL can have it.

``embedding vector`` is added beside the model's fields when the database is PostgreSQL
and the ``vector`` extension exists or can be created. Without it (SQLite, or a
PostgreSQL server without pgvector) everything else migrates and works, and vector
operations of the pgvector store report why they are unavailable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.operations.base import Operation

logger = logging.getLogger(__name__)

VECTOR_COLUMN = "embedding"


@dataclass(frozen=True)
class VectorSupport:
    """Whether the database has the native vector column, and if not, why."""

    available: bool
    reason: str | None = None


def _table(connection: BaseDatabaseWrapper) -> str:
    from cogitator_memory.embeddings.models import Embedding

    return connection.ops.quote_name(Embedding._meta.db_table)


def vector_support(connection: BaseDatabaseWrapper) -> VectorSupport:
    """What the database offers, read from its catalogue (no changes made)."""
    if connection.vendor != "postgresql":
        return VectorSupport(False, f"{connection.vendor} has no pgvector; use the exact store")
    from cogitator_memory.embeddings.models import Embedding

    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        if row is None:
            return VectorSupport(False, "the pgvector extension is not installed in this database")
        cursor.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = %s",
            [Embedding._meta.db_table, VECTOR_COLUMN],
        )
        if cursor.fetchone() is None:
            return VectorSupport(
                False, "the embeddings table has no vector column; run ensure_vector_column()"
            )
    return VectorSupport(True)


def ensure_vector_column(connection: BaseDatabaseWrapper) -> VectorSupport:
    """Create the extension and the column where possible; report what is there."""
    if connection.vendor != "postgresql":
        return vector_support(connection)
    try:
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cursor.execute(
                f"ALTER TABLE {_table(connection)} ADD COLUMN IF NOT EXISTS {VECTOR_COLUMN} vector"
            )
    except DatabaseError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        logger.warning("pgvector is unavailable, vector search is off: %s", reason)
        return VectorSupport(False, f"pgvector is unavailable: {reason}")
    return vector_support(connection)


class AddVectorColumnWhereAvailable(Operation):
    """Migration operation: the native vector column on PostgreSQL with pgvector; nothing
    elsewhere, and nothing (but a warning) where the extension cannot be created."""

    reduces_to_sql = False
    reversible = True

    def state_forwards(self, app_label: str, state: Any) -> None:
        # The column is not a model field: the model state does not change.
        pass

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        connection = schema_editor.connection
        if connection.vendor == "postgresql":
            ensure_vector_column(connection)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        connection = schema_editor.connection
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    f"ALTER TABLE {_table(connection)} DROP COLUMN IF EXISTS {VECTOR_COLUMN}"
                )

    def describe(self) -> str:
        return "Add the pgvector column to embeddings where PostgreSQL has the extension"


def default_connection() -> BaseDatabaseWrapper:
    from django.db import router

    from cogitator_memory.embeddings.models import Embedding

    return connections[router.db_for_write(Embedding)]
