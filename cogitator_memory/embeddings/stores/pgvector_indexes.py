"""The indexes of the pgvector store: one partial HNSW index per vector size, defined with
pgvector-python's ``HnswIndex`` and built by Django's schema editor (concurrently, outside
a transaction, or in the caller's), and a btree on ``dimensions``.

Nothing here runs on the request path: ``manage.py vector_indexes``, the migration that
builds the configured size's index, and ``PgVectorEmbeddingStore.ensure_index`` call it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, cast

from django.contrib.postgres.indexes import OpClass
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Index, Q
from django.db.models.expressions import OrderBy
from django.db.models.functions import Collate
from django.db.models.indexes import IndexExpression
from django.db.transaction import TransactionManagementError
from pgvector.django import HnswIndex

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.stores.pgvector_native import (
    MAX_HALFVEC_INDEX_DIMENSIONS,
    MAX_VECTOR_INDEX_DIMENSIONS,
    NativeState,
    indexed_vector,
    quoted_table,
)

if TYPE_CHECKING:
    from django.db.backends.postgresql.schema import DatabaseSchemaEditor

# The graph's links per node and candidates per insert while building: pgvector's
# defaults, written out so the definition shows what it builds.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# The btree that answers "which sizes are stored" in two index probes.
DIMENSIONS_INDEX = "cm_emb_dims"
# Seconds between two tries of the lock of an index another process is building.
LOCK_POLL_SECONDS = 0.5


class IndexStatus(StrEnum):
    READY = "ready"
    MISSING = "missing"
    # Left by a concurrent build that failed or was stopped; no search uses it, and the
    # next build drops it first.
    INVALID = "invalid"
    BUILDING = "building"
    # Above 4,000 dimensions HNSW indexes nothing: searches scan the rows of that size.
    NO_INDEX = "none (exact scan above 4000 dimensions)"
    # The column was created with a fixed size (vector(1536)) and holds no other.
    OTHER_COLUMN_SIZE = "none (the column holds another size)"


@dataclass(frozen=True)
class IndexState:
    """The index of one vector size, and how many rows of that size are stored."""

    dimensions: int
    rows: int
    name: str | None
    status: IndexStatus

    @property
    def needs_build(self) -> bool:
        return self.status in (IndexStatus.MISSING, IndexStatus.INVALID)


@dataclass(frozen=True)
class BuildProgress:
    """One index build on the embeddings table, from ``pg_stat_progress_create_index``."""

    index: str | None
    phase: str
    tuples_done: int
    tuples_total: int
    blocks_done: int
    blocks_total: int

    def __str__(self) -> str:
        if self.tuples_total:
            return f"{self.phase}: {self.tuples_done:,} of {self.tuples_total:,} rows"
        if self.blocks_total:
            return f"{self.phase}: {self.blocks_done:,} of {self.blocks_total:,} blocks"
        return self.phase


def hnsw_index_name(dimensions: int) -> str:
    return f"cm_emb_hnsw_{dimensions}"


def operator_class(dimensions: int) -> str:
    if dimensions <= MAX_VECTOR_INDEX_DIMENSIONS:
        return "vector_cosine_ops"
    return "halfvec_cosine_ops"


def register_opclass_wrapper() -> None:
    """Let index definitions use ``OpClass`` without ``django.contrib.postgres`` installed.

    That app's ready() registers ``OpClass`` as a wrapper of index expressions, which puts
    the operator class after the parenthesised expression instead of inside the
    parentheses; the same registration here spares projects from adding the app
    (django/contrib/postgres/apps.py).
    """
    if OpClass not in IndexExpression.wrapper_classes:
        IndexExpression.register_wrappers(OrderBy, OpClass, Collate)


def hnsw_index(dimensions: int) -> HnswIndex:
    """The partial HNSW index of vectors of this size (up to 4,000 dimensions): over the
    expression searches order by, for the rows of that size only."""
    if dimensions > MAX_HALFVEC_INDEX_DIMENSIONS:
        raise ValueError(f"HNSW indexes at most {MAX_HALFVEC_INDEX_DIMENSIONS} dimensions.")
    register_opclass_wrapper()
    return HnswIndex(
        OpClass(indexed_vector(dimensions), name=operator_class(dimensions)),
        name=hnsw_index_name(dimensions),
        condition=Q(dimensions=dimensions),
        m=HNSW_M,
        ef_construction=HNSW_EF_CONSTRUCTION,
    )


def dimensions_index() -> Index:
    return Index(fields=["dimensions"], name=DIMENSIONS_INDEX)


def indexable(dimensions: int, state: NativeState) -> bool:
    """Whether vectors of this size get an HNSW index in this column."""
    return dimensions <= MAX_HALFVEC_INDEX_DIMENSIONS and state.fits_column(dimensions)


def missing_sizes(sizes: Iterable[int], state: NativeState) -> tuple[int, ...]:
    """The sizes among ``sizes`` that should have an index and have no valid one
    (``state`` read with its indexes)."""
    return tuple(
        sorted(
            size
            for size in set(sizes)
            if indexable(size, state) and hnsw_index_name(size) not in state.valid_indexes
        )
    )


def missing_hint(sizes: tuple[int, ...]) -> str | None:
    """What to do about sizes without their index, in a sentence; None when none lacks it."""
    if not sizes:
        return None
    names = [str(size) for size in sizes]
    named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return (
        f"No HNSW index for vectors of {named} dimensions: their searches read every row of "
        "that size (the same results, slower as the table grows). Build "
        f"{'it' if len(sizes) == 1 else 'them'} with: manage.py vector_indexes --create"
    )


# --- the catalogue -------------------------------------------------------------------


def index_statuses(
    connection: BaseDatabaseWrapper, name: str | None = None
) -> dict[str, IndexStatus]:
    """The indexes of the embeddings table by name (or the one of this name): ready,
    invalid, or being built."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, i.indisvalid, EXISTS (SELECT 1 FROM "
            "pg_stat_progress_create_index p WHERE p.index_relid = c.oid) "
            "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = to_regclass(%s) AND (%s::text IS NULL OR c.relname = %s)",
            [quoted_table(connection), name, name],
        )
        rows = cursor.fetchall()
    return {
        name: IndexStatus.READY
        if valid
        else IndexStatus.BUILDING
        if building
        else IndexStatus.INVALID
        for name, valid, building in rows
    }


def index_states(
    sizes: Iterable[int],
    rows: Mapping[int, int],
    state: NativeState,
    statuses: Mapping[str, IndexStatus],
) -> list[IndexState]:
    """The index of each size, smallest first; ``rows`` counts the stored rows by size."""
    found = []
    for size in sorted(set(sizes)):
        if size > MAX_HALFVEC_INDEX_DIMENSIONS:
            found.append(IndexState(size, rows.get(size, 0), None, IndexStatus.NO_INDEX))
            continue
        name = hnsw_index_name(size)
        if not state.fits_column(size):
            status = IndexStatus.OTHER_COLUMN_SIZE
        else:
            status = statuses.get(name, IndexStatus.MISSING)
        found.append(IndexState(size, rows.get(size, 0), name, status))
    return found


def build_progress(connection: BaseDatabaseWrapper) -> list[BuildProgress]:
    """The index builds running on the embeddings table, in any session."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, p.phase, p.tuples_done, p.tuples_total, p.blocks_done, "
            "p.blocks_total FROM pg_stat_progress_create_index p "
            "LEFT JOIN pg_class c ON c.oid = p.index_relid "
            "WHERE p.relid = to_regclass(%s) ORDER BY p.pid",
            [quoted_table(connection)],
        )
        return [BuildProgress(*row) for row in cursor.fetchall()]


# --- building ------------------------------------------------------------------------


def build_index(connection: BaseDatabaseWrapper, index: Index, *, concurrently: bool) -> bool:
    """Create ``index`` on the embeddings table unless a valid index of its name exists;
    an invalid one is dropped and built again. Returns whether this call built it.

    ``concurrently``: CREATE INDEX CONCURRENTLY, outside any transaction; writers go on
    while it builds. Raises ``TransactionManagementError`` inside a transaction. Otherwise
    CREATE INDEX in the caller's transaction (or one of its own), which blocks writes to
    the table until that transaction ends.
    """
    if not concurrently:
        with transaction.atomic(using=connection.alias):
            with connection.cursor() as cursor:
                # Builders of one index take turns, and the second finds it made.
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [index.name])
            return _build(connection, index, concurrently=False)
    refuse_concurrent_build_in_transaction(connection, str(index.name))
    with _session_lock(connection, str(index.name)):
        return _build(connection, index, concurrently=True)


def refuse_concurrent_build_in_transaction(connection: BaseDatabaseWrapper, name: str) -> None:
    """CREATE INDEX CONCURRENTLY cannot run inside a transaction block."""
    if connection.in_atomic_block:
        raise TransactionManagementError(
            f"{name} cannot be built concurrently inside a transaction: build it "
            "outside transaction.atomic(), or with concurrently=False within it."
        )


def _build(connection: BaseDatabaseWrapper, index: Index, *, concurrently: bool) -> bool:
    name = str(index.name)
    status = index_statuses(connection, name).get(name)
    # Being built by a session that took no lock (by hand): dropping it would wait for
    # that build and then throw it away.
    while status == IndexStatus.BUILDING:
        time.sleep(LOCK_POLL_SECONDS)
        status = index_statuses(connection, name).get(name)
    if status == IndexStatus.READY:
        return False
    with connection.schema_editor(atomic=False) as base_editor:
        editor = cast("DatabaseSchemaEditor", base_editor)
        if status == IndexStatus.INVALID:
            editor.remove_index(Embedding, index, concurrently=concurrently)
        editor.add_index(Embedding, index, concurrently=concurrently)
    return True


@contextmanager
def _session_lock(connection: BaseDatabaseWrapper, name: str) -> Iterator[None]:
    """The advisory lock of one index, held by the session across a concurrent build, so
    two builders take turns and the second finds the index made.

    Tried, not waited for: a session waiting in pg_advisory_lock() holds a snapshot, and
    CREATE INDEX CONCURRENTLY in the session holding the lock waits until every older
    snapshot is gone, so the two would wait for each other.
    """
    with connection.cursor() as cursor:
        while True:
            cursor.execute("SELECT pg_try_advisory_lock(hashtext(%s))", [name])
            if cursor.fetchone()[0]:
                break
            time.sleep(LOCK_POLL_SECONDS)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [name])
