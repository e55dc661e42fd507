"""The embedding service seam: turns texts into vectors.

Providers (``providers/``) implement ``EmbeddingService``; ``get_embedding_service()``
builds the one ``COGITATOR_MEMORY["EMBEDDINGS"]`` names, or gives None when no provider is
configured (recall then searches without vectors).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from cogitator_memory.conf import memory_settings


class EmbeddingService(Protocol):
    """Texts in, one vector per text out, in order."""

    provider: str
    model: str
    dimensions: int | None

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


PROVIDERS = {
    "openai": "cogitator_memory.embeddings.providers.openai.OpenAIEmbeddings",
    "ollama": "cogitator_memory.embeddings.providers.ollama.OllamaEmbeddings",
    "google": "cogitator_memory.embeddings.providers.google.GoogleEmbeddings",
    "local": "cogitator_memory.embeddings.providers.local.LocalEmbeddings",
}


def embedding_service_from_settings(config: dict[str, Any]) -> EmbeddingService | None:
    provider = config.get("PROVIDER")
    if not provider:
        return None
    factory = import_string(PROVIDERS.get(provider, provider))
    options = {
        key.lower(): value
        for key, value in config.items()
        if key
        in {"MODEL", "DIMENSIONS", "API_KEY", "BASE_URL", "TIMEOUT", "BATCH_SIZE", "MAX_RETRIES"}
        and value is not None
    }
    service: EmbeddingService = factory(**options)
    return service


@lru_cache(maxsize=1)
def get_embedding_service() -> EmbeddingService | None:
    """The configured embedding service (cached), or None when none is configured."""
    return embedding_service_from_settings(memory_settings.EMBEDDINGS)


@receiver(setting_changed, dispatch_uid="cogitator_memory.embeddings.services.reset")
def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "COGITATOR_MEMORY":
        get_embedding_service.cache_clear()
