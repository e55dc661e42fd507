"""Exact nearest neighbours in process: the store of SQLite (and of PostgreSQL without
pgvector). Vectors are read in batches and scored with numpy, keeping only the best
``limit`` between batches, so memory stays bounded by the batch size, not the table."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.stores.base import (
    DatabaseEmbeddingStore,
    check_vector,
    filtered,
    stored,
)
from cogitator_memory.embeddings.types import EmbeddingFilter, SearchHit, VectorStatus
from cogitator_memory.limits import check_limit

# Rows scored per batch. 5,000 vectors of 1,536 float32 are 30 MB; fewer batches run
# faster, smaller ones cap memory lower.
SCAN_BATCH_SIZE = 5000


class ExactEmbeddingStore(DatabaseEmbeddingStore):
    """Cosine similarity over every matching row, computed in process."""

    def vector_status(self) -> VectorStatus:
        stored_dims = list(
            Embedding.objects.order_by().values_list("dimensions", flat=True).distinct()[:2]
        )
        others = [dims for dims in stored_dims if dims != self.dimensions]
        if self.dimensions is not None and others:
            return VectorStatus(
                False,
                self.dimensions,
                f"stored embeddings have {others[0]} dimensions; the store is configured "
                f"for {self.dimensions}",
            )
        return VectorStatus(True, self.dimensions or (stored_dims[0] if stored_dims else None))

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
        limit = check_limit(limit)
        query = check_vector(vector)
        query = query / np.linalg.norm(query)
        rows = filtered(Embedding.objects.filter(dimensions=query.size), filter).values_list(
            "id", "vector"
        )
        best: list[tuple[float, str]] = []
        batch_ids: list[str] = []
        batch_vectors: list[bytes] = []

        def score_batch() -> None:
            matrix = np.frombuffer(b"".join(batch_vectors), dtype="<f4").reshape(
                len(batch_vectors), query.size
            )
            norms = np.linalg.norm(matrix, axis=1)
            norms[norms == 0] = 1.0
            scores = (matrix @ query) / norms
            kept = [
                (score, row_id)
                for row_id, score in zip(batch_ids, scores.tolist(), strict=True)
                if threshold is None or score >= threshold
            ]
            # Ties at the cut keep the lowest ids, whatever order the rows were read in.
            best[:] = heapq.nsmallest(limit, [*best, *kept], key=lambda pair: (-pair[0], pair[1]))
            batch_ids.clear()
            batch_vectors.clear()

        for row_id, data in rows.iterator(chunk_size=SCAN_BATCH_SIZE):
            batch_ids.append(row_id)
            batch_vectors.append(bytes(data))
            if len(batch_ids) >= SCAN_BATCH_SIZE:
                score_batch()
        if batch_ids:
            score_batch()

        ranked = sorted(best, key=lambda pair: (-pair[0], pair[1]))
        found = Embedding.objects.in_bulk([row_id for _, row_id in ranked])
        return [
            SearchHit(embedding=stored(found[row_id]), score=float(score))
            for score, row_id in ranked
            if row_id in found
        ]
