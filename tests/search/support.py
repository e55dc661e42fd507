"""What the search tests share: embedding services at the service seam (deterministic,
in process), settings choosing them, and embeddings written through the exact store.

``ConceptEmbeddings`` counts the words of a text per concept: words of one meaning
(``car``, ``automobile``, ``vehicle``) share a dimension, so texts that say the same thing
in other words are near, as with a real model. Words holding a digit (codes, numbers) are
left out, as a model carries little meaning for ``ZX-4471``: those only keyword search
finds. Every vector also has a small constant part, so no text embeds to zero.

Name it as the provider in settings with ``CONCEPT_PROVIDER``; the other settings keys
arrive as keyword arguments and are ignored.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import EmbeddingStore, NewEmbedding, StoredEmbedding
from cogitator_memory.exceptions import EmbeddingServiceError

CONCEPT_PROVIDER = "tests.search.support.ConceptEmbeddings"
FAILING_PROVIDER = "tests.search.support.FailingEmbeddings"
DIMENSIONS = 64

CONCEPTS = {
    "vehicle": ("car", "cars", "automobile", "automobiles", "vehicle", "sedan"),
    "dog": ("dog", "dogs", "puppy", "puppies", "hound"),
    "doctor": ("doctor", "physician", "gp"),
    "bill": ("bill", "invoice", "invoices", "receipt"),
    "repair": ("repair", "repaired", "fix", "fixed", "mechanic", "broke", "broken"),
    "travel": ("trip", "journey", "travel", "holiday", "vacation"),
    "food": ("dinner", "lunch", "meal", "food", "pasta"),
}
CONCEPT_OF = {word: concept for concept, words in CONCEPTS.items() for word in words}


def concept_vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    vector = [0.0] * dimensions
    vector[0] = 0.05
    for word in re.findall(r"[\w-]+", text.lower()):
        if any(character.isdigit() for character in word):
            continue
        concept = CONCEPT_OF.get(word, word)
        vector[1 + zlib.crc32(concept.encode()) % (dimensions - 1)] += 1.0
    return vector


class ConceptEmbeddings:
    provider = "concepts"
    model = "concept-counts"

    def __init__(self, *, dimensions: int | None = None, **ignored: Any) -> None:
        self.dimensions = dimensions or DIMENSIONS
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [concept_vector(text, self.dimensions) for text in texts]


class FailingEmbeddings:
    """A provider that answers every request with HTTP 503."""

    provider = "failing"
    model = "none"

    def __init__(self, *, dimensions: int | None = None, **ignored: Any) -> None:
        self.dimensions = dimensions or DIMENSIONS

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingServiceError(self.provider, "service unavailable", status=503)


def embeddings_settings(provider: str | None, **extra: Any) -> dict[str, Any]:
    """``COGITATOR_MEMORY`` with this embedding provider and the exact store, which
    searches the same way on both databases."""
    return {"EMBEDDINGS": {"PROVIDER": provider, "STORE": "exact", **extra}}


def write_text(
    source_id: str,
    content: str,
    *,
    agent: str | None = None,
    thread: str | None = None,
    user: str | None = None,
    source_type: str = "document",
    created_at: datetime | None = None,
    store: EmbeddingStore | None = None,
    **metadata: Any,
) -> StoredEmbedding:
    """Store ``content`` as the embedding of ``source_id`` with its concept vector, through
    ``store`` (the exact store when None)."""
    scope = {"agentId": agent, "threadId": thread, "userId": user}
    metadata.update({key: value for key, value in scope.items() if value is not None})
    (stored,) = (store or ExactEmbeddingStore()).add(
        [
            NewEmbedding(
                source_type=source_type,
                source_id=source_id,
                content=content,
                vector=concept_vector(content),
                metadata=metadata,
            )
        ]
    )
    if created_at is not None:
        Embedding.objects.filter(pk=stored.id).update(created_at=created_at)
    return stored
