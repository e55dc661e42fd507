"""The pgvector store: nearest neighbours searched in PostgreSQL on the native column.

Rows are written by ``DatabaseEmbeddingStore`` (float32 bytes in ``vector``); this store
also fills the untyped ``embedding vector`` column (``embeddings/schema.py``) and
searches it with cosine distance through one partial HNSW index per dimension:

- up to 2,000 dimensions: ``(embedding)::vector(d)`` with ``vector_cosine_ops``;
- 2,001 to 4,000: ``(embedding)::halfvec(d)`` with ``halfvec_cosine_ops`` (HNSW indexes
  ``vector`` only up to 2,000 dimensions, ``halfvec`` up to 4,000);
- above 4,000: no index, an exact scan in SQL.

Writes never build indexes: an index is built by ``manage.py vector_indexes --create``
(or ``ensure_index``), with CREATE INDEX CONCURRENTLY outside any transaction, and for
the configured ``DIMENSIONS`` by the migration. Until a size has its index, its searches
run the same statement as an exact scan: the same results, slower as the table grows;
``vector_status()`` names the sizes in ``missing_indexes`` and says what to run.

A search orders by exactly the indexed expression, else the planner cannot use the
index. In its transaction it raises ``hnsw.ef_search`` to the limit and, on pgvector
0.8+, turns on iterative scans, so a large limit or a filter that drops most candidates
still gets every matching row (as long as the index scan finds them within pgvector's
``hnsw.max_scan_tuples``, 20,000 visited rows by default).

A store configured for D dimensions reports stored vectors of other sizes, or a column
created with a fixed other size, in ``vector_status()`` and refuses to search, instead of
failing each search with a database error. Without the extension (or the column) rows
are still added, read and deleted as bytes; ``search`` raises ``VectorSearchUnavailable``
naming the reason, which ``vector_status()`` also reports. Rows stored then get their
native vectors from ``sync_native_column()`` once the extension is back
(``ensure_vector_column``).

pgvector-python's Django pieces, and where SQL stays raw:

- Searches are querysets: ``CosineDistance`` between the column cast to
  ``VectorField(dimensions=d)`` or ``HalfVectorField(dimensions=d)`` and the query cast
  alike, with the scope filters every store shares (``pgvector_native.py``).
- Indexes are ``HnswIndex`` definitions (``OpClass``, ``condition``, ``m``,
  ``ef_construction``) that the schema editor creates, concurrently where it can
  (``pgvector_indexes.py``).
- The column is not a model field: one untyped column holds vectors of every size in one
  table, which no typed ``VectorField`` can, and the model must migrate the same on
  SQLite and on PostgreSQL without the extension. ``NativeVector`` names it in
  expressions as ``F()`` would; ``ensure_vector_column`` adds it with ALTER TABLE.
- Writing it is raw SQL (one UPDATE per batch from two unnested arrays): the ORM updates
  model fields only.
- The catalogue (the extension, the column's size, valid indexes, stored sizes, index
  build progress), the search settings (``set_config`` of ``hnsw.ef_search`` and
  ``hnsw.iterative_scan``, in the same round trip as the catalogue) and the advisory
  locks of index builds have no ORM form.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Count
from django.db.models.lookups import IsNull

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.schema import default_connection
from cogitator_memory.embeddings.stores.base import (
    DatabaseEmbeddingStore,
    bytes_vector,
    check_vector,
    filtered,
    stored,
)
from cogitator_memory.embeddings.stores.pgvector_indexes import (
    IndexState,
    build_index,
    dimensions_index,
    hnsw_index,
    hnsw_index_name,
    index_states,
    index_statuses,
    indexable,
    missing_hint,
    missing_sizes,
    refuse_concurrent_build_in_transaction,
)
from cogitator_memory.embeddings.stores.pgvector_native import (
    MAX_VECTOR_DIMENSIONS,
    WRITE_BATCH_SIZE,
    NativeState,
    NativeVector,
    check_native,
    cosine_distance,
    read_native_state,
    unavailable_reason,
    write_native,
)
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    NewEmbedding,
    SearchHit,
    VectorStatus,
)
from cogitator_memory.exceptions import InvalidInput, VectorSearchUnavailable
from cogitator_memory.limits import check_limit

__all__ = ["PgVectorEmbeddingStore", "VectorSearchUnavailable"]

# hnsw.ef_search accepts 1..1000; pgvector's default is 40.
MIN_EF_SEARCH = 40
MAX_EF_SEARCH = 1000


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

    def _connection(self) -> BaseDatabaseWrapper:
        return default_connection()

    def _stored_dimensions(self, connection: BaseDatabaseWrapper, state: NativeState) -> list[int]:
        """The sizes of the stored vectors (``state`` read with_sizes); the full list is
        read only when the smallest and the largest differ."""
        if state.smallest is None or state.largest is None:
            return []
        if state.smallest == state.largest:
            return [int(state.smallest)]
        sizes = Embedding.objects.using(connection.alias).values_list("dimensions", flat=True)
        return list(sizes.order_by("dimensions").distinct()[:10])

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

    # --- writes ------------------------------------------------------------------------

    def _check_new(self, embedding: NewEmbedding) -> np.ndarray:
        return check_native(super()._check_new(embedding))

    def after_write(self, rows: list[Embedding]) -> None:
        connection = self._connection()
        state = read_native_state(connection)
        if not state.available:
            # The bytes are stored; searches report why vectors are unavailable.
            return
        write_native(
            connection,
            [
                (row.id, bytes_vector(row.vector))
                for row in rows
                if state.fits_column(row.dimensions)
            ],
        )

    def sync_native_column(
        self, *, batch_size: int = WRITE_BATCH_SIZE, concurrently: bool = True
    ) -> int:
        """Fill the native column of rows stored without it (written while the extension
        was missing, or by another store), then build the indexes of the sizes filled
        (``concurrently`` as in ``ensure_index``); returns how many rows were filled.
        Each batch commits on its own, so a run that stops half way is resumed by the
        next."""
        connection = self._connection()
        filled = 0
        sizes: set[int] = set()
        while True:
            with transaction.atomic(using=connection.alias):
                state = read_native_state(connection)
                if not state.available:
                    raise VectorSearchUnavailable(unavailable_reason(connection, state))
                rows = Embedding.objects.using(connection.alias).filter(
                    IsNull(NativeVector(), True), dimensions__lte=MAX_VECTOR_DIMENSIONS
                )
                fixed_size = state.column_size
                if fixed_size is not None and fixed_size != -1:
                    rows = rows.filter(dimensions=fixed_size)
                found = list(
                    rows.order_by("pk")
                    .select_for_update(skip_locked=True)
                    .values_list("pk", "dimensions", "vector")[:batch_size]
                )
                write_native(connection, [(pk, bytes_vector(data)) for pk, _, data in found])
            if not found:
                break
            sizes.update(size for _, size, _ in found)
            filled += len(found)
        # Building an index over filled rows is many times faster than inserting the
        # rows into it one by one.
        for size in sorted(sizes):
            self.ensure_index(size, concurrently=concurrently)
        return filled

    # --- indexes -----------------------------------------------------------------------

    def ensure_index(self, dimensions: int, *, concurrently: bool = True) -> bool:
        """Build the HNSW index of vectors of this size, unless it exists (e.g. before a
        bulk load of a new size, or after one: building over the rows is faster than
        inserting them one by one). Returns whether the size has its index now: False
        when vectors are unavailable, the size is above 4,000 dimensions (searched
        exactly), or the column holds another fixed size.

        ``concurrently``: CREATE INDEX CONCURRENTLY, which lets writes go on and must run
        outside a transaction (``TransactionManagementError`` inside one); False builds
        in the caller's transaction and blocks writes to the table until it ends.
        Raises ``InvalidInput`` for a size pgvector cannot hold.
        """
        if not 1 <= dimensions <= MAX_VECTOR_DIMENSIONS:
            raise InvalidInput(
                {"dimensions": f"dimensions must lie within 1..{MAX_VECTOR_DIMENSIONS}."}
            )
        connection = self._connection()
        if concurrently:
            refuse_concurrent_build_in_transaction(connection, hnsw_index_name(dimensions))
        state = read_native_state(connection)
        if not state.available or not indexable(dimensions, state):
            return False
        build_index(connection, dimensions_index(), concurrently=concurrently)
        build_index(connection, hnsw_index(dimensions), concurrently=concurrently)
        return True

    def index_states(self, dimensions: Iterable[int] | None = None) -> list[IndexState]:
        """The index of each size, smallest first: of the sizes given, or else of every
        stored size and the configured one. Raises ``VectorSearchUnavailable`` when the
        database has no native column."""
        connection = self._connection()
        state = read_native_state(connection)
        if not state.available:
            raise VectorSearchUnavailable(unavailable_reason(connection, state))
        counted = (
            Embedding.objects.using(connection.alias)
            .values_list("dimensions")
            .annotate(rows=Count("pk"))
            .order_by()
        )
        rows = {int(size): int(count) for size, count in counted}
        if dimensions is None:
            dimensions = {*rows, *([self.dimensions] if self.dimensions else [])}
        return index_states(dimensions, rows, state, index_statuses(connection))

    # --- reads -------------------------------------------------------------------------

    def vector_status(self) -> VectorStatus:
        connection = self._connection()
        state = read_native_state(connection, with_indexes=True, with_sizes=True)
        if not state.available:
            return VectorStatus(False, self.dimensions, unavailable_reason(connection, state))
        stored_dimensions = self._stored_dimensions(connection, state)
        mismatch = self._mismatch(state, stored_dimensions)
        if mismatch:
            return VectorStatus(False, self.dimensions, mismatch)
        configured = [self.dimensions] if self.dimensions is not None else []
        missing = missing_sizes([*stored_dimensions, *configured], state)
        if self.dimensions is not None:
            dimensions: int | None = self.dimensions
        elif state.column_size not in (None, -1):
            dimensions = state.column_size
        else:
            dimensions = stored_dimensions[0] if len(stored_dimensions) == 1 else None
        return VectorStatus(True, dimensions, missing_indexes=missing, hint=missing_hint(missing))

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
        check_limit(limit)
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
            state = read_native_state(
                connection,
                with_sizes=self.dimensions is not None,
                ef_search=min(MAX_EF_SEARCH, max(self.min_ef_search, limit)),
            )
            if not state.available:
                raise VectorSearchUnavailable(unavailable_reason(connection, state))
            mismatch = self._mismatch(state, self._stored_dimensions(connection, state))
            if mismatch:
                raise VectorSearchUnavailable(mismatch)
            if not state.fits_column(query.size):
                raise VectorSearchUnavailable(
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
        """The nearest rows and their cosine distances, nearest first."""
        distance = cosine_distance(query)
        # The size as a literal: the planner must see it to prove the partial index's
        # WHERE dimensions = d. Rows without the native vector (written while the
        # extension was missing) have no distance; the index skips them too.
        candidates = filtered(
            Embedding.objects.using(connection.alias).filter(
                IsNull(NativeVector(), False), dimensions=int(query.size)
            ),
            filter,
        )
        # Exactly the indexed expression, nothing after it, or no index is used.
        nearest = candidates.order_by(distance.asc()).values("pk")[:limit]
        # The nearest by the index's order (relaxed under iterative scans), sorted by
        # distance again; the threshold applies to them, not inside the index scan,
        # which would go on through the graph looking for more.
        rows = (
            Embedding.objects.using(connection.alias)
            .filter(pk__in=nearest)
            .annotate(distance=distance)
            .defer("vector")
        )
        if threshold is not None:
            rows = rows.filter(distance__lte=1.0 - float(threshold))
        # The rows of a GrantedQuerySet are typed as the plain model, without annotations.
        return [(row, float(cast(Any, row).distance)) for row in rows.order_by("distance", "pk")]
