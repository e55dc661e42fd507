"""The vectors of memory items: each item embedded once, for recall's item vector channel.

An item's text (``item_text``: its subject, attribute and value, and its sentence when it
has one) is embedded after the item is written, in the background (``tasks/embeddings.py``
``embed_items_task``, enqueued on commit by ``MemoryItems.write``), and stored with
source_type ``"item"``, source_id the item id, and the item's scope as metadata
(``{"index": "items", "agentId", "userId", "threadId"}``), so a vector is seen by whom the
item is. ``item_vectors`` reads the stored vectors of items and embeds the missing ones on
demand, in one provider call. Without an embedding provider there are no item vectors.

An item's vectors go with it: the items' dependent deletes them when it purges the item
(``items/forgetting.py``), and a vector is stored only for an item that still exists,
read under the agent's write lock, which a purge takes too: a purge either committed
before (the item is skipped) or waits for the vector and deletes it with the item.
Pruning and searches tell a standing item's vector by ``ITEM_VECTORS``, registered with
``embeddings.sources`` in ``AppConfig.ready``.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from cogitator_memory.embeddings.models import AGENT_ID_KEY, INDEX_KEY, THREAD_ID_KEY, USER_ID_KEY
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.services import EmbeddingService, get_embedding_service
from cogitator_memory.embeddings.sources import VectorSource
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore, NewEmbedding
from cogitator_memory.exceptions import EmbeddingServiceError
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.items.services import MemoryItems

__all__ = [
    "ITEMS_INDEX",
    "ITEM_SOURCE_TYPE",
    "ITEM_VECTORS",
    "embed_items",
    "item_embedding",
    "item_text",
    "item_vectors",
]

ITEM_SOURCE_TYPE = "item"
ITEMS_INDEX = "items"
ITEMS_FILTER = EmbeddingFilter(source_type=ITEM_SOURCE_TYPE, index=ITEMS_INDEX)
# An item's vector stands while the item exists.
ITEM_VECTORS = VectorSource(
    ITEM_SOURCE_TYPE, ITEMS_INDEX, standing=lambda: MemoryItem.objects.all(), noun="items"
)
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


def _store_unless_gone(
    store: EmbeddingStore, items: Sequence[MemoryItem], vectors: Sequence[Sequence[float]]
) -> int:
    """Store the vectors of the items that still exist; returns how many. Read and
    written under the write lock of the items' agents, which a purge takes before it
    deletes items and their vectors (``items/forgetting.py``), so the vector of an item
    purged while the provider answered is never left behind."""
    with transaction.atomic():
        MemoryItems().lock_agents(item.agent_id for item in items)
        present = set(
            MemoryItem.objects.filter(pk__in=[item.pk for item in items]).values_list(
                "pk", flat=True
            )
        )
        rows = [
            item_embedding(item, vector)
            for item, vector in zip(items, vectors, strict=True)
            if item.pk in present
        ]
        if rows:
            store.add(rows)
    return len(rows)


def _embed_and_store(
    items: Sequence[MemoryItem], service: EmbeddingService, store: EmbeddingStore
) -> tuple[dict[str, list[float]], int]:
    """The vectors of these items, embedded now, and how many of them were stored (those
    of items that still exist)."""
    if not items:
        return {}, 0
    vectors = service.embed([item_text(item) for item in items])
    if len(vectors) != len(items):
        raise EmbeddingServiceError(
            service.provider, f"returned {len(vectors)} vectors for {len(items)} texts"
        )
    stored = _store_unless_gone(store, items, vectors)
    return {item.pk: list(vector) for item, vector in zip(items, vectors, strict=True)}, stored


def embed_items(item_ids: Sequence[str], *, service: EmbeddingService | None = None) -> int:
    """Embed the items of these ids that have no vector yet, in one provider call, and
    store their vectors. Ids of items that are gone are skipped, as are items purged
    while the provider answered. Does nothing without an embedding service. Returns how
    many items were embedded and stored.

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
    _vectors, stored = _embed_and_store(missing, service, store)
    return stored


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
    embedded, _stored = _embed_and_store(missing, service, store)
    found.update(embedded)
    return found
