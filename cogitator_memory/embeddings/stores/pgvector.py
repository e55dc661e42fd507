"""The pgvector store: nearest neighbours searched in PostgreSQL on the native column.

Rows are written by ``DatabaseEmbeddingStore`` (float32 bytes in ``vector``); this store
also fills the untyped ``embedding vector`` column (``embeddings/schema.py``) and
searches it with cosine distance (``<=>``) through one partial HNSW index per dimension:

- up to 2,000 dimensions: ``(embedding::vector(d))`` with ``vector_cosine_ops``;
- 2,001 to 4,000: ``(embedding::halfvec(d))`` with ``halfvec_cosine_ops`` (HNSW indexes
  ``vector`` only up to 2,000 dimensions, ``halfvec`` up to 4,000);
- above 4,000: no index, an exact scan in SQL.

The index of a dimension is created when rows of that dimension are first written, so it
works from the first row (``ensure_index`` builds it after a bulk load, faster than row by
row). A search orders by exactly the indexed expression, else the planner cannot use the
index. In its transaction it raises ``hnsw.ef_search`` to the limit and, on pgvector 0.8+,
turns on iterative scans, so a large limit or a filter that drops most candidates still
gets every matching row (as long as the index scan finds them within pgvector's
``hnsw.max_scan_tuples``, 20,000 visited rows by default).

A store configured for D dimensions reports stored vectors of other sizes, or a column
created with a fixed other size, in ``vector_status()`` and refuses to search, instead of
failing each search with a database error. A btree on ``dimensions`` (``cm_emb_dims``)
answers that check in two index probes.

Without the extension (or the column) rows are still added, read and deleted as bytes;
``search`` raises ``VectorsUnavailable`` naming the reason, which ``vector_status()``
also reports. Rows stored then get their native vectors from ``sync_native_column()``
once the extension is back (``ensure_vector_column``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, FloatField
from django.db.models.expressions import RawSQL

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.schema import VECTOR_COLUMN, default_connection, vector_support
from cogitator_memory.embeddings.stores.base import (
    DatabaseEmbeddingStore,
    bytes_vector,
    check_vector,
    filtered,
    stored,
)
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    NewEmbedding,
    SearchHit,
    StoredEmbedding,
    VectorStatus,
)
from cogitator_memory.exceptions import Conflict, InvalidInput

# pgvector's limits: HNSW indexes vector up to 2,000 dimensions and halfvec up to 4,000;
# the vector type itself holds at most 16,000.
MAX_VECTOR_INDEX_DIMENSIONS = 2000
MAX_HALFVEC_INDEX_DIMENSIONS = 4000
MAX_VECTOR_DIMENSIONS = 16000
# The largest half-precision float.
MAX_HALFVEC_VALUE = 65504.0
# hnsw.ef_search accepts 1..1000; pgvector's default is 40.
MIN_EF_SEARCH = 40
MAX_EF_SEARCH = 1000
# hnsw.iterative_scan exists from pgvector 0.8.0.
ITERATIVE_SCAN_VERSION = (0, 8, 0)
# Rows per UPDATE of the native column: one statement per batch, a few MB of text.
WRITE_BATCH_SIZE = 500
DIMENSIONS_INDEX = "cm_emb_dims"
FLOAT32_TEXT = "{:.9g}"
# The column of a search's rows that carries the cosine distance.
DISTANCE_ALIAS = "cm_distance"


class VectorsUnavailable(Conflict):
    """Vectors cannot be searched here; ``reason`` says why (no extension, no column, or
    stored vectors of another size than the store is configured for)."""

    code = "vectors_unavailable"

    def __init__(self, reason: str) -> None:
        super().__init__(f"Vector search is unavailable: {reason}")
        self.reason = reason


def hnsw_index_name(dimensions: int) -> str:
    return f"cm_emb_hnsw_{dimensions}"


def vector_text(vector: np.ndarray) -> str:
    """pgvector's text form. Nine significant digits give back the same float32 (and
    print faster and shorter than a double's shortest form)."""
    values = np.asarray(vector, dtype="<f4").tolist()
    return "[" + ",".join(map(FLOAT32_TEXT.format, values)) + "]"


def check_native(vector: np.ndarray) -> np.ndarray:
    """Refuse what the native column or its index cannot hold, before the database fails
    on it half way through a write."""
    if vector.size > MAX_VECTOR_DIMENSIONS:
        raise InvalidInput(
            {
                "vector": f"pgvector holds at most {MAX_VECTOR_DIMENSIONS} dimensions, "
                f"got {vector.size}."
            }
        )
    if (
        MAX_VECTOR_INDEX_DIMENSIONS < vector.size <= MAX_HALFVEC_INDEX_DIMENSIONS
        and np.abs(vector).max() > MAX_HALFVEC_VALUE
    ):
        raise InvalidInput(
            {
                "vector": f"Vectors of {MAX_VECTOR_INDEX_DIMENSIONS + 1} to "
                f"{MAX_HALFVEC_INDEX_DIMENSIONS} dimensions are indexed as halfvec, whose "
                f"values lie within +-{MAX_HALFVEC_VALUE:g}."
            }
        )
    return vector


@dataclass(frozen=True)
class SearchPlan:
    """How vectors of one dimension are indexed and compared: ``expression`` is both the
    index's expression and the left side of the query's ``<=>``."""

    dimensions: int
    expression: str
    query_cast: str
    operator_class: str | None

    @classmethod
    def for_dimensions(cls, dimensions: int, column: str) -> SearchPlan:
        if dimensions <= MAX_VECTOR_INDEX_DIMENSIONS:
            kind = f"vector({dimensions})"
            return cls(dimensions, f"({column}::{kind})", kind, "vector_cosine_ops")
        if dimensions <= MAX_HALFVEC_INDEX_DIMENSIONS:
            kind = f"halfvec({dimensions})"
            return cls(dimensions, f"({column}::{kind})", kind, "halfvec_cosine_ops")
        return cls(dimensions, column, "vector", None)


@dataclass(frozen=True)
class NativeState:
    """What the catalogue says about the native column, read in one query."""

    extension_version: str | None
    # The column's size when it was created with one (vector(1536)), -1 when untyped,
    # None when there is no column.
    column_size: int | None
    existing_indexes: frozenset[str]
    # The smallest and largest stored size, when asked for.
    smallest: int | None = None
    largest: int | None = None

    @property
    def available(self) -> bool:
        return self.extension_version is not None and self.column_size is not None

    def fits_column(self, dimensions: int) -> bool:
        return self.column_size in (-1, dimensions)


class PgVectorEmbeddingStore(DatabaseEmbeddingStore):
    """Embeddings in PostgreSQL, searched with pgvector's HNSW indexes.

    ``min_ef_search``: the fewest candidates a graph search keeps (``hnsw.ef_search``,
    raised to the limit when that is larger); more find the nearest more reliably and
    take longer (bench/vectors.py measures both).
    """

    def __init__(self, *, dimensions: int | None = None, min_ef_search: int = MIN_EF_SEARCH):
        super().__init__(dimensions=dimensions)
        if not 1 <= min_ef_search <= MAX_EF_SEARCH:
            raise InvalidInput(
                {"min_ef_search": f"min_ef_search must lie within 1..{MAX_EF_SEARCH}."}
            )
        self.min_ef_search = min_ef_search

    # --- the database ------------------------------------------------------------------

    def _connection(self) -> BaseDatabaseWrapper:
        return default_connection()

    def _table(self, connection: BaseDatabaseWrapper) -> str:
        return str(connection.ops.quote_name(Embedding._meta.db_table))

    def _native_state(
        self,
        connection: BaseDatabaseWrapper,
        indexes: Iterable[str] = (),
        *,
        with_sizes: bool = False,
        ef_search: int | None = None,
    ) -> NativeState:
        """The catalogue's answers in one round trip. With ``ef_search``, the same
        statement also makes the search settings of the transaction (``set_config(...,
        true)`` is ``SET LOCAL``): the candidates a graph search keeps, and on pgvector
        0.8+ iterative scans."""
        names = sorted({DIMENSIONS_INDEX, *indexes})
        table = self._table(connection)
        # min and max are two probes of the btree on dimensions.
        sizes = (
            f"(SELECT min(dimensions) FROM {table}), (SELECT max(dimensions) FROM {table})"
            if with_sizes
            else "NULL, NULL"
        )
        settings = "NULL, NULL"
        params: list[Any] = [table, VECTOR_COLUMN, names]
        if ef_search is not None:
            # When a filter drops most candidates, an iterative scan goes on through the
            # graph until the limit is reached, instead of returning what the first
            # ef_search candidates left. Relaxed order may return them slightly out of
            # order; the search sorts them again.
            settings = (
                "set_config('hnsw.ef_search', %s, true), "
                "CASE WHEN string_to_array(split_part(v.extversion, '-', 1), '.')::int[] "
                ">= %s::int[] THEN set_config('hnsw.iterative_scan', 'relaxed_order', true) END"
            )
            params += [str(ef_search), list(ITERATIVE_SCAN_VERSION)]
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                SELECT
                    v.extversion,
                    (SELECT atttypmod FROM pg_attribute
                      WHERE attrelid = to_regclass(%s) AND attname = %s AND NOT attisdropped),
                    (SELECT array_agg(name) FROM unnest(%s::text[]) AS name
                      WHERE to_regclass(name) IS NOT NULL),
                    {sizes},
                    {settings}
                FROM (SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector')
                      AS extversion) AS v
                """,
                params,
            )
            version, column_size, existing, smallest, largest, *_settings = cursor.fetchone()
        return NativeState(version, column_size, frozenset(existing or ()), smallest, largest)

    def _unavailable_reason(self, connection: BaseDatabaseWrapper, state: NativeState) -> str:
        reason = vector_support(connection).reason
        if reason:
            return reason
        # The catalogue changed between the two reads (the extension was just created).
        if state.extension_version is None:
            return "the pgvector extension is not installed in this database"
        return "the embeddings table has no vector column"

    def _stored_dimensions(self, connection: BaseDatabaseWrapper, state: NativeState) -> list[int]:
        """The sizes of the stored vectors (``state`` read with_sizes); the full list is
        read only when the smallest and the largest differ."""
        if state.smallest is None or state.largest is None:
            return []
        if state.smallest == state.largest:
            return [int(state.smallest)]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT DISTINCT dimensions FROM {self._table(connection)} ORDER BY 1 LIMIT 10"
            )
            return [int(row[0]) for row in cursor.fetchall()]

    def _mismatch(self, state: NativeState, stored_dimensions: list[int]) -> str | None:
        """Why a store configured for ``self.dimensions`` cannot search what is stored."""
        if self.dimensions is None:
            return None
        if state.column_size not in (None, -1) and state.column_size != self.dimensions:
            return (
                f"the embedding column holds vector({state.column_size}); the store is "
                f"configured for {self.dimensions} dimensions"
            )
        others = [size for size in stored_dimensions if size != self.dimensions]
        if not others:
            return None
        sizes = ", ".join(str(size) for size in others)
        return (
            f"stored embeddings have {sizes} dimensions; the store is configured for "
            f"{self.dimensions}"
        )

    def _ensure_indexes(
        self, connection: BaseDatabaseWrapper, dimensions: Iterable[int], state: NativeState
    ) -> None:
        """Create the missing indexes: the HNSW index of each dimension that has one, and
        the btree on dimensions that answers vector_status() in two index probes."""
        wanted = {
            hnsw_index_name(size): size
            for size in dimensions
            if size <= MAX_HALFVEC_INDEX_DIMENSIONS and state.fits_column(size)
        }
        missing = [
            name for name in [DIMENSIONS_INDEX, *wanted] if name not in state.existing_indexes
        ]
        if not missing:
            return
        table = self._table(connection)
        with connection.cursor() as cursor:
            for name in missing:
                # Writers creating the same index take turns, and the second one finds it
                # made. Taken before this transaction writes rows, so two first writers of
                # one dimension wait for each other only here.
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [name])
                if name == DIMENSIONS_INDEX:
                    cursor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} (dimensions)")
                    continue
                size = wanted[name]
                plan = SearchPlan.for_dimensions(size, VECTOR_COLUMN)
                cursor.execute(
                    f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw "
                    f"({plan.expression} {plan.operator_class}) WHERE dimensions = {size}"
                )

    def _write_native(
        self, connection: BaseDatabaseWrapper, pairs: Sequence[tuple[str, np.ndarray]]
    ) -> None:
        """One UPDATE per batch: ids and vector texts as two arrays, unnested side by side."""
        table = self._table(connection)
        with connection.cursor() as cursor:
            for start in range(0, len(pairs), WRITE_BATCH_SIZE):
                batch = pairs[start : start + WRITE_BATCH_SIZE]
                cursor.execute(
                    f"UPDATE {table} AS e SET {VECTOR_COLUMN} = v.vec::vector "
                    "FROM unnest(%s::text[], %s::text[]) AS v(id, vec) WHERE e.id = v.id",
                    [[row_id for row_id, _ in batch], [vector_text(vec) for _, vec in batch]],
                )

    # --- writes ------------------------------------------------------------------------

    def _check_new(self, embedding: NewEmbedding) -> np.ndarray:
        return check_native(super()._check_new(embedding))

    def add(self, embeddings: Sequence[NewEmbedding]) -> list[StoredEmbedding]:
        connection = self._connection()
        with transaction.atomic(using=connection.alias):
            # Indexes first, before this transaction holds row locks on the table (see
            # _ensure_indexes); the rows are validated again by the base class.
            sizes = {int(self._check_new(embedding).size) for embedding in embeddings}
            state = self._native_state(connection, map(hnsw_index_name, sizes))
            if state.available and sizes:
                self._ensure_indexes(connection, sizes, state)
            return super().add(embeddings)

    def after_write(self, rows: list[Embedding]) -> None:
        connection = self._connection()
        state = self._native_state(connection)
        if not state.available:
            # The bytes are stored; searches report why vectors are unavailable.
            return
        self._write_native(
            connection,
            [
                (row.id, bytes_vector(row.vector))
                for row in rows
                if state.fits_column(row.dimensions)
            ],
        )

    def ensure_index(self, dimensions: int) -> bool:
        """Create the index of this dimension now (e.g. after loading rows in bulk);
        False when vectors are unavailable or this size has no index (above 4,000)."""
        connection = self._connection()
        with transaction.atomic(using=connection.alias):
            state = self._native_state(connection, [hnsw_index_name(dimensions)])
            if not state.available or dimensions > MAX_HALFVEC_INDEX_DIMENSIONS:
                return False
            self._ensure_indexes(connection, [dimensions], state)
        return True

    def sync_native_column(self, *, batch_size: int = WRITE_BATCH_SIZE) -> int:
        """Fill the native column of rows stored without it (written while the extension
        was missing, or by another store), then create the indexes they need; returns
        how many rows were filled. Each batch commits on its own, so a run that stops
        half way is resumed by the next."""
        connection = self._connection()
        table = self._table(connection)
        filled = 0
        sizes: set[int] = set()
        while True:
            with transaction.atomic(using=connection.alias):
                state = self._native_state(connection)
                if not state.available:
                    raise VectorsUnavailable(self._unavailable_reason(connection, state))
                size_condition = (
                    "" if state.column_size == -1 else f" AND dimensions = {state.column_size}"
                )
                with connection.cursor() as cursor:
                    cursor.execute(
                        f"SELECT id, dimensions, vector FROM {table} WHERE {VECTOR_COLUMN} IS "
                        f"NULL AND dimensions <= {MAX_VECTOR_DIMENSIONS}{size_condition} "
                        "ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED",
                        [batch_size],
                    )
                    found = cursor.fetchall()
                self._write_native(connection, [(i, bytes_vector(data)) for i, _, data in found])
            if not found:
                break
            sizes.update(int(size) for _, size, _ in found)
            filled += len(found)
        # Building an index over filled rows is many times faster than inserting the
        # rows into it one by one.
        for size in sorted(sizes):
            self.ensure_index(size)
        return filled

    # --- reads -------------------------------------------------------------------------

    def vector_status(self) -> VectorStatus:
        connection = self._connection()
        state = self._native_state(connection, with_sizes=True)
        if not state.available:
            return VectorStatus(False, self.dimensions, self._unavailable_reason(connection, state))
        stored_dimensions = self._stored_dimensions(connection, state)
        mismatch = self._mismatch(state, stored_dimensions)
        if mismatch:
            return VectorStatus(False, self.dimensions, mismatch)
        if self.dimensions is not None:
            return VectorStatus(True, self.dimensions)
        if state.column_size not in (None, -1):
            return VectorStatus(True, state.column_size)
        return VectorStatus(True, stored_dimensions[0] if len(stored_dimensions) == 1 else None)

    def search(
        self,
        vector: Sequence[float],
        *,
        limit: int = 10,
        threshold: float | None = None,
        filter: EmbeddingFilter | None = None,
    ) -> list[SearchHit]:
        """The ``limit`` embeddings most similar to ``vector`` (cosine), best first,
        among those of its dimension that ``filter`` admits."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInput({"limit": "limit must be a whole number of 1 or more."})
        query = check_vector(vector)
        if self.dimensions is not None and query.size != self.dimensions:
            raise InvalidInput(
                {"vector": f"Expected {self.dimensions} dimensions, got {query.size}."}
            )
        check_native(query)
        connection = self._connection()
        with transaction.atomic(using=connection.alias):
            # Only a configured size can mismatch what is stored. Candidates the graph
            # search keeps: at least the limit, so a large limit is not cut at the floor.
            state = self._native_state(
                connection,
                with_sizes=self.dimensions is not None,
                ef_search=min(MAX_EF_SEARCH, max(self.min_ef_search, limit)),
            )
            if not state.available:
                raise VectorsUnavailable(self._unavailable_reason(connection, state))
            mismatch = self._mismatch(state, self._stored_dimensions(connection, state))
            if mismatch:
                raise VectorsUnavailable(mismatch)
            if not state.fits_column(query.size):
                raise VectorsUnavailable(
                    f"the embedding column holds vector({state.column_size}); the query has "
                    f"{query.size} dimensions"
                )
            rows = self._nearest(connection, query, limit, threshold, filter)
        return [SearchHit(embedding=stored(row), score=1.0 - distance) for row, distance in rows]

    def _nearest(
        self,
        connection: BaseDatabaseWrapper,
        query: np.ndarray,
        limit: int,
        threshold: float | None,
        filter: EmbeddingFilter | None,
    ) -> list[tuple[Embedding, float]]:
        """The nearest rows and their cosine distances, nearest first, read with the
        statement that finds them."""
        table = self._table(connection)
        plan = SearchPlan.for_dimensions(int(query.size), f"{table}.{VECTOR_COLUMN}")
        distance_sql = f"{plan.expression} <=> %s::{plan.query_cast}"
        text = vector_text(query)
        candidates = filtered(
            # The size as a literal: the planner must see it to prove the partial index's
            # WHERE dimensions = d. Rows without the native vector (written while the
            # extension was missing) have no distance; the index skips them too.
            Embedding.objects.using(connection.alias).filter(
                RawSQL(
                    f"{table}.dimensions = {plan.dimensions} "
                    f"AND {table}.{VECTOR_COLUMN} IS NOT NULL",
                    [],
                    output_field=BooleanField(),
                )
            ),
            filter,
        )
        inner = (
            candidates.annotate(distance=RawSQL(distance_sql, [text], output_field=FloatField()))
            # Exactly the indexed expression, nothing after it, or no index is used.
            .order_by(RawSQL(distance_sql, [text]).asc())
            .values_list("id", "distance")[:limit]
        )
        inner_sql, inner_params = inner.query.sql_with_params()
        outer_where = ""
        outer_params: list[float] = []
        if threshold is not None:
            outer_where = "WHERE hits.distance <= %s"
            outer_params.append(1.0 - float(threshold))
        # The model's columns only: the native vector stays in the database.
        columns = ", ".join(
            f"e.{connection.ops.quote_name(str(field.column))}"
            for field in Embedding._meta.concrete_fields
        )
        # The nearest by the index's order (relaxed under iterative scans), then sorted
        # by distance again; the rows' model columns read by the same statement.
        rows = Embedding.objects.using(connection.alias).raw(
            f"WITH hits AS MATERIALIZED ({inner_sql}) "
            f"SELECT {columns}, hits.distance AS {DISTANCE_ALIAS} "
            f"FROM hits JOIN {table} AS e ON e.id = hits.id {outer_where} "
            "ORDER BY hits.distance, hits.id",
            [*inner_params, *outer_params],
        )
        return [(row, float(getattr(row, DISTANCE_ALIAS))) for row in rows]
