"""The configured vector store."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from cogitator_memory.conf import memory_settings
from cogitator_memory.embeddings.schema import default_connection, vector_support
from cogitator_memory.embeddings.types import EmbeddingStore

STORES = {
    "exact": "cogitator_memory.embeddings.stores.exact.ExactEmbeddingStore",
    "pgvector": "cogitator_memory.embeddings.stores.pgvector.PgVectorEmbeddingStore",
    "qdrant": "cogitator_memory.embeddings.stores.qdrant.QdrantEmbeddingStore",
}


def embedding_store_from_settings(config: dict[str, Any]) -> EmbeddingStore:
    name = config.get("STORE") or "auto"
    if name == "auto":
        name = "pgvector" if vector_support(default_connection()).available else "exact"
    factory = import_string(STORES.get(name, name))
    options: dict[str, Any] = {"dimensions": config.get("DIMENSIONS")}
    if name == "pgvector":
        breadth = config.get("HNSW_EF_SEARCH")
        if breadth is not None:
            options["min_ef_search"] = breadth
    if name == "qdrant":
        options.update(
            url=config.get("QDRANT_URL"),
            path=config.get("QDRANT_PATH"),
            api_key=config.get("QDRANT_API_KEY"),
            collection=config.get("QDRANT_COLLECTION"),
        )
    store: EmbeddingStore = factory(**options)
    return store


@lru_cache(maxsize=1)
def get_embedding_store() -> EmbeddingStore:
    """The store ``COGITATOR_MEMORY["EMBEDDINGS"]["STORE"]`` names (cached)."""
    return embedding_store_from_settings(memory_settings.EMBEDDINGS)


@receiver(setting_changed, dispatch_uid="cogitator_memory.embeddings.registry.reset")
def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in {"COGITATOR_MEMORY", "DATABASES"}:
        get_embedding_store.cache_clear()
