"""The native ``embedding vector`` column of the pgvector store: its limits, the
expressions that name and compare it, what the catalogue says about it, and its writes.

``stores/pgvector.py`` describes the store, and which SQL stays raw and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Expression, Field, Value
from django.db.models.expressions import Col
from django.db.models.functions import Cast
from pgvector.django import CosineDistance, HalfVectorField, VectorField

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.schema import VECTOR_COLUMN, vector_support
from cogitator_memory.exceptions import InvalidInput

# pgvector's limits: HNSW indexes vector up to 2,000 dimensions and halfvec up to 4,000;
# the vector type itself holds at most 16,000.
MAX_VECTOR_INDEX_DIMENSIONS = 2000
MAX_HALFVEC_INDEX_DIMENSIONS = 4000
MAX_VECTOR_DIMENSIONS = 16000
# The largest half-precision float.
MAX_HALFVEC_VALUE = 65504.0
# hnsw.iterative_scan exists from pgvector 0.8.0.
ITERATIVE_SCAN_VERSION = (0, 8, 0)
# Rows per UPDATE of the native column: one statement per batch, a few MB of text.
WRITE_BATCH_SIZE = 500
FLOAT32_TEXT = "{:.9g}"


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


# --- expressions ---------------------------------------------------------------------


class NativeVector(Expression):
    """The native column in an expression, named as ``F()`` names a field: qualified by
    the query's alias of the embeddings table (and relabelled with it in a subquery),
    bare in an index definition. The column is not a model field, so ``F()`` cannot."""

    def __init__(self) -> None:
        super().__init__(output_field=VectorField())

    def resolve_expression(
        self,
        query: Any = None,
        allow_joins: bool = True,
        reuse: Any = None,
        summarize: bool = False,
        for_save: bool = False,
    ) -> Any:
        column = VectorField(null=True)
        column.set_attributes_from_name(VECTOR_COLUMN)
        # No alias in an index definition, as Django resolves F() there.
        alias: Any = None
        if query is not None and query.alias_cols:
            alias = query.get_initial_alias()
        return Col(alias, column)


def indexed_field(dimensions: int) -> Field[Any, Any] | None:
    """The type vectors of this size are indexed and compared as: ``vector(d)`` up to
    2,000 dimensions, ``halfvec(d)`` up to 4,000; None above (no index, an exact scan)."""
    if dimensions <= MAX_VECTOR_INDEX_DIMENSIONS:
        return VectorField(dimensions=dimensions)
    if dimensions <= MAX_HALFVEC_INDEX_DIMENSIONS:
        return HalfVectorField(dimensions=dimensions)
    return None


def indexed_vector(dimensions: int) -> Expression:
    """The native column as the index of this size holds it. A search orders by exactly
    this expression, else the planner cannot use the index."""
    field = indexed_field(dimensions)
    return NativeVector() if field is None else Cast(NativeVector(), field)


def cosine_distance(query: np.ndarray) -> CosineDistance:
    """``<=>`` between the stored vectors of the query's size and the query, both cast to
    the type the index of that size compares."""
    size = int(query.size)
    field = indexed_field(size) or VectorField()
    return CosineDistance(indexed_vector(size), Cast(Value(vector_text(query)), field))


# --- the catalogue -------------------------------------------------------------------


@dataclass(frozen=True)
class NativeState:
    """What the catalogue says about the native column, read in one query."""

    extension_version: str | None
    # The column's size when it was created with one (vector(1536)), -1 when untyped,
    # None when there is no column.
    column_size: int | None
    # The valid indexes of the embeddings table, when asked for.
    valid_indexes: frozenset[str] = frozenset()
    # The smallest and largest stored size, when asked for.
    smallest: int | None = None
    largest: int | None = None

    @property
    def available(self) -> bool:
        return self.extension_version is not None and self.column_size is not None

    def fits_column(self, dimensions: int) -> bool:
        return self.column_size in (-1, dimensions)


def quoted_table(connection: BaseDatabaseWrapper) -> str:
    return str(connection.ops.quote_name(Embedding._meta.db_table))


def read_native_state(
    connection: BaseDatabaseWrapper,
    *,
    with_indexes: bool = False,
    with_sizes: bool = False,
    ef_search: int | None = None,
) -> NativeState:
    """The catalogue's answers in one round trip. With ``ef_search``, the same statement
    also makes the search settings of the transaction (``set_config(..., true)`` is
    ``SET LOCAL``): the candidates a graph search keeps, and on pgvector 0.8+ iterative
    scans."""
    table = quoted_table(connection)
    params: list[Any] = [table, VECTOR_COLUMN]
    indexes = "NULL"
    if with_indexes:
        # Valid only: a concurrent build that failed leaves an invalid index behind,
        # which no search uses.
        indexes = (
            "(SELECT array_agg(c.relname::text) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = to_regclass(%s) AND i.indisvalid)"
        )
        params.append(table)
    # min and max are two probes of the btree on dimensions.
    sizes = (
        f"(SELECT min(dimensions) FROM {table}), (SELECT max(dimensions) FROM {table})"
        if with_sizes
        else "NULL, NULL"
    )
    settings = "NULL, NULL"
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
                {indexes},
                {sizes},
                {settings}
            FROM (SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector')
                  AS extversion) AS v
            """,
            params,
        )
        version, column_size, valid, smallest, largest, *_settings = cursor.fetchone()
    return NativeState(version, column_size, frozenset(valid or ()), smallest, largest)


def unavailable_reason(connection: BaseDatabaseWrapper, state: NativeState) -> str:
    reason = vector_support(connection).reason
    if reason:
        return reason
    # The catalogue changed between the two reads (the extension was just created).
    if state.extension_version is None:
        return "the pgvector extension is not installed in this database"
    return "the embeddings table has no vector column"


def write_native(connection: BaseDatabaseWrapper, pairs: Sequence[tuple[str, np.ndarray]]) -> None:
    """One UPDATE per batch: ids and vector texts as two arrays, unnested side by side."""
    table = quoted_table(connection)
    with connection.cursor() as cursor:
        for start in range(0, len(pairs), WRITE_BATCH_SIZE):
            batch = pairs[start : start + WRITE_BATCH_SIZE]
            cursor.execute(
                f"UPDATE {table} AS e SET {VECTOR_COLUMN} = v.vec::vector "
                "FROM unnest(%s::text[], %s::text[]) AS v(id, vec) WHERE e.id = v.id",
                [[row_id for row_id, _ in batch], [vector_text(vec) for _, vec in batch]],
            )
