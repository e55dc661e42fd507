"""How similar entries are to the turn's input, by their vectors.

Without the message index the builder embeds the entries it scores itself, each once per
builder (``VectorCache``, by entry id); with it, the entries' vectors are in the embedding
store (embedded in the background) and a search of the store finds the thread's nearest.
The input's vector is cached per builder too, so one turn embeds its input once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from cogitator_memory.embeddings.message_index import (
    MESSAGE_SOURCE_TYPE,
    MESSAGES_INDEX,
    entry_text,
)
from cogitator_memory.embeddings.services import EmbeddingService
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore
from cogitator_memory.exceptions import EmbeddingServiceError, VectorSearchUnavailable

__all__ = [
    "MAX_CACHED_VECTORS",
    "SCORED_ENTRIES",
    "VectorCache",
    "cosines_from_index",
    "cosines_in_process",
]

# Without the message index, relevant scores the newest this many entries (hybrid the
# newest this many older than the history it keeps).
SCORED_ENTRIES = 200
# Vectors a builder keeps in process: about 6 MB at 1,536 dimensions (float32), the
# entries of the threads used lately; the oldest used go first.
MAX_CACHED_VECTORS = 1000
# Input vectors a builder keeps: one a turn, a few turns back.
MAX_CACHED_INPUTS = 16


class VectorCache:
    """Vectors by key, the least recently used dropped past ``size``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray[Any, Any]] = OrderedDict()

    def get(self, key: str) -> np.ndarray[Any, Any] | None:
        vector = self._vectors.get(key)
        if vector is not None:
            self._vectors.move_to_end(key)
        return vector

    def put(self, key: str, vector: Sequence[float]) -> np.ndarray[Any, Any]:
        array = np.asarray(vector, dtype=np.float32)
        self._vectors[key] = array
        self._vectors.move_to_end(key)
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)
        return array

    def __len__(self) -> int:
        return len(self._vectors)


def _embed(service: EmbeddingService, texts: list[str]) -> list[list[float]]:
    vectors = service.embed(texts)
    if len(vectors) != len(texts):
        raise EmbeddingServiceError(
            service.provider, f"returned {len(vectors)} vectors for {len(texts)} texts"
        )
    return vectors


def input_vector(text: str, service: EmbeddingService, cache: VectorCache) -> np.ndarray[Any, Any]:
    """The vector of the input, embedded once per builder."""
    found = cache.get(text)
    if found is not None:
        return found
    return cache.put(text, _embed(service, [text])[0])


def _cosine(query: np.ndarray[Any, Any], vector: np.ndarray[Any, Any]) -> float:
    if query.shape != vector.shape:
        raise VectorSearchUnavailable(
            f"the input's vector has {query.shape[0]} dimensions and an entry's has "
            f"{vector.shape[0]}"
        )
    norms = float(np.linalg.norm(query) * np.linalg.norm(vector))
    return float(np.dot(query, vector) / norms) if norms else 0.0


def cosines_in_process(
    input: str,
    entries: Sequence[Any],
    *,
    service: EmbeddingService,
    entry_vectors: VectorCache,
    input_vectors: VectorCache,
) -> dict[str, float]:
    """The cosine of each entry that has text to the input; entries not yet in
    ``entry_vectors`` are embedded in one call. Raises the service's errors and
    ``VectorSearchUnavailable`` for vectors of another size."""
    query = input_vector(input, service, input_vectors)
    texts = {entry.pk: entry_text(entry) for entry in entries}
    missing = [pk for pk, text in texts.items() if text and entry_vectors.get(pk) is None]
    vectors: dict[str, np.ndarray[Any, Any]] = {}
    if missing:
        embedded = _embed(service, [texts[pk] for pk in missing])
        vectors.update(
            {
                pk: entry_vectors.put(pk, vector)
                for pk, vector in zip(missing, embedded, strict=True)
            }
        )
    scores: dict[str, float] = {}
    for pk, text in texts.items():
        if not text:
            continue
        vector = vectors.get(pk)
        if vector is None:
            vector = entry_vectors.get(pk)
        if vector is not None:
            scores[pk] = _cosine(query, vector)
    return scores


def cosines_from_index(
    input: str,
    thread_id: str,
    *,
    service: EmbeddingService,
    store: EmbeddingStore,
    input_vectors: VectorCache,
    limit: int,
) -> dict[str, float]:
    """The cosines of the thread's ``limit`` entries nearest to the input, searched in the
    message index of the store. Raises the service's and the store's errors."""
    query = input_vector(input, service, input_vectors)
    status = store.vector_status()
    if not status.available:
        raise VectorSearchUnavailable(status.reason or "the store reports no vectors")
    if status.dimensions is not None and status.dimensions != query.shape[0]:
        raise VectorSearchUnavailable(
            f"the input's vector has {query.shape[0]} dimensions and the store's have "
            f"{status.dimensions}"
        )
    hits = store.search(
        query.tolist(),
        limit=limit,
        filter=EmbeddingFilter(
            thread_id=thread_id, source_type=MESSAGE_SOURCE_TYPE, index=MESSAGES_INDEX
        ),
    )
    scores: dict[str, float] = {}
    for hit in hits:
        if hit.embedding.metadata.get("threadId") == thread_id:
            scores.setdefault(hit.embedding.source_id, hit.score)
    return scores
