"""The vectors of memory items: each item embedded once, for recall's item vector channel.

An item's text (``item_text``: its subject, attribute and value, and its sentence when it
has one) is embedded after the item is written, in the background (``tasks/embeddings.py``
``embed_items_task``, enqueued on commit by ``MemoryItems.write``), and stored with
source_type ``"item"``, source_id the item id, and the item's scope as metadata
(``{"index": "items", "agentId", "userId", "threadId"}``), so a vector is seen by whom the
item is. ``item_vectors`` reads the stored vectors of items and embeds the missing ones on
demand, in one provider call. Without an embedding provider there are no item vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

from cogitator_memory.embeddings.models import AGENT_ID_KEY, INDEX_KEY, THREAD_ID_KEY, USER_ID_KEY
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.services import EmbeddingService, get_embedding_service
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore, NewEmbedding
from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.items.models import MemoryItem

__all__ = [
    "ITEMS_INDEX",
    "ITEM_SOURCE_TYPE",
    "embed_items",
    "item_embedding",
    "item_text",
    "item_vectors",
]

ITEM_SOURCE_TYPE = "item"
ITEMS_INDEX = "items"
ITEMS_FILTER = EmbeddingFilter(source_type=ITEM_SOURCE_TYPE, index=ITEMS_INDEX)
# Item texts are a sentence or two; this bounds a pathological value.
MAX_ITEM_TEXT_CHARS = 2000


def item_text(item: MemoryItem) -> str:
    """What an item is found by: "<subject> <attribute>: <value>", then its sentence."""
    head = f"{item.subject.name} {item.attribute.replace('_', ' ')}: {item.value}"
    text = f"{head}. {item.content}" if item.content and item.content != item.value else head
    return text[:MAX_ITEM_TEXT_CHARS]


def item_embedding(item: MemoryItem, vector: Sequence[float]) -> NewEmbedding:
    """The vector of an item as the store takes it, scoped like the item."""
    scope = {
        INDEX_KEY: ITEMS_INDEX,
        AGENT_ID_KEY: item.agent_id,
        USER_ID_KEY: item.user_id,
        THREAD_ID_KEY: item.thread_id,
    }
    return NewEmbedding(
        source_type=ITEM_SOURCE_TYPE,
        source_id=item.pk,
        vector=vector,
        content=item_text(item),
        metadata={key: value for key, value in scope.items() if value is not None},
    )


def _stored_vectors(store: EmbeddingStore, ids: Sequence[str]) -> dict[str, list[float]]:
    return {
        embedding.source_id: embedding.vector
        for embedding in store.get_by_sources(list(ids), filter=ITEMS_FILTER)
        if embedding.vector is not None
    }


def _embed_and_store(
    items: Sequence[MemoryItem], service: EmbeddingService, store: EmbeddingStore
) -> dict[str, list[float]]:
    if not items:
        return {}
    vectors = service.embed([item_text(item) for item in items])
    if len(vectors) != len(items):
        raise EmbeddingServiceError(
            service.provider, f"returned {len(vectors)} vectors for {len(items)} texts"
        )
    store.add([item_embedding(item, vector) for item, vector in zip(items, vectors, strict=True)])
    return {item.pk: list(vector) for item, vector in zip(items, vectors, strict=True)}


def embed_items(item_ids: Sequence[str], *, service: EmbeddingService | None = None) -> int:
    """Embed the items of these ids that have no vector yet, in one provider call, and
    store their vectors. Ids of items that are gone are skipped. Does nothing without an
    embedding service. Returns how many items were embedded.

    Raises ``EmbeddingServiceError`` when the provider fails; nothing is stored then.
    """
    service = service if service is not None else get_embedding_service()
    ids = list(dict.fromkeys(item_ids))
    if service is None or not ids:
        return 0
    store = get_embedding_store()
    present = _stored_vectors(store, ids)
    missing = list(
        MemoryItem.objects.filter(pk__in=[item_id for item_id in ids if item_id not in present])
        .select_related("subject")
        .order_by("pk")
    )
    return len(_embed_and_store(missing, service, store))


def item_vectors(
    items: Sequence[MemoryItem],
    *,
    service: EmbeddingService,
    store: EmbeddingStore | None = None,
) -> dict[str, list[float]]:
    """The vector of each item, by id: the stored one, or, for items not embedded yet,
    one embedded now (all of them in one provider call) and stored, so an item is
    embedded once. Raises ``EmbeddingServiceError`` when the provider fails."""
    store = store if store is not None else get_embedding_store()
    found = _stored_vectors(store, [item.pk for item in items])
    missing = [item for item in items if item.pk not in found]
    found.update(_embed_and_store(missing, service, store))
    return found
