"""The native pgvector column of embeddings, where PostgreSQL can have it.

``embedding vector`` is added beside the model's fields when the database is PostgreSQL
and the ``vector`` extension exists or can be created. Without it (SQLite, or a
PostgreSQL server without pgvector) everything else migrates and works, and vector
operations of the pgvector store report why they are unavailable.

The column is untyped, so one table holds vectors of every size; each size gets its own
partial HNSW index (``stores/pgvector_indexes.py``). The migration builds the one of the
configured ``DIMENSIONS``; ``manage.py vector_indexes --create`` builds the others.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.operations.base import Operation

from cogitator_memory.limits import is_whole_number

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


def configured_dimensions() -> int | None:
    """``COGITATOR_MEMORY["EMBEDDINGS"]["DIMENSIONS"]`` when it is a size, else None."""
    from cogitator_memory.conf import memory_settings

    size = memory_settings.EMBEDDINGS.get("DIMENSIONS")
    if not is_whole_number(size, minimum=1):
        return None
    return size


class AddVectorIndexesWhereAvailable(Operation):
    """Migration operation: on PostgreSQL with the native column, the btree on
    ``dimensions`` and, when ``COGITATOR_MEMORY["EMBEDDINGS"]["DIMENSIONS"]`` names a size
    HNSW can index, that size's HNSW index, so its searches use an index from the first
    row; nothing elsewhere. Built concurrently when the migration runs outside a
    transaction (``atomic = False``). Other sizes get theirs from
    ``manage.py vector_indexes --create``."""

    reduces_to_sql = False
    reversible = True

    def state_forwards(self, app_label: str, state: Any) -> None:
        # Neither the column nor its indexes are in the model: the state does not change.
        pass

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        connection = schema_editor.connection
        if connection.vendor != "postgresql" or not vector_support(connection).available:
            return
        from cogitator_memory.embeddings.stores import pgvector_indexes as indexes
        from cogitator_memory.embeddings.stores.pgvector_native import read_native_state

        concurrently = not connection.in_atomic_block
        indexes.build_index(connection, indexes.dimensions_index(), concurrently=concurrently)
        size = configured_dimensions()
        if size is not None and indexes.indexable(size, read_native_state(connection)):
            indexes.build_index(connection, indexes.hnsw_index(size), concurrently=concurrently)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        from cogitator_memory.embeddings.models import Embedding
        from cogitator_memory.embeddings.stores import pgvector_indexes as indexes
        from cogitator_memory.embeddings.stores.pgvector_native import (
            MAX_HALFVEC_INDEX_DIMENSIONS,
        )

        concurrently = not connection.in_atomic_block
        size = configured_dimensions()
        if size is not None and size <= MAX_HALFVEC_INDEX_DIMENSIONS:
            index = indexes.hnsw_index(size)
            schema_editor.remove_index(Embedding, index, concurrently=concurrently)
        schema_editor.remove_index(Embedding, indexes.dimensions_index(), concurrently=concurrently)

    def describe(self) -> str:
        return "Add the vector indexes of embeddings where PostgreSQL has the column"


def default_connection() -> BaseDatabaseWrapper:
    from django.db import router

    from cogitator_memory.embeddings.models import Embedding

    return connections[router.db_for_write(Embedding)]
