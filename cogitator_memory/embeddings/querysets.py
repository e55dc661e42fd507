"""Named filters of embeddings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

if TYPE_CHECKING:
    from cogitator_memory.embeddings.models import Embedding  # noqa: F401


class EmbeddingQuerySet(models.QuerySet["Embedding"]):
    def visible_to_agent(self, agent_id: str | None) -> EmbeddingQuerySet:
        """Embeddings of this agent and embeddings of no agent (shared by everyone)."""
        if agent_id is None:
            return self
        return self.filter(models.Q(agent_id=agent_id) | models.Q(agent_id__isnull=True))

    def in_thread(self, thread_id: str | None) -> EmbeddingQuerySet:
        """Embeddings of this thread and embeddings of no thread."""
        if thread_id is None:
            return self
        return self.filter(models.Q(thread_id=thread_id) | models.Q(thread_id__isnull=True))

    def of_sources(self, source_ids: list[str]) -> EmbeddingQuerySet:
        """Embeddings of any of these sources."""
        return self.filter(source_id__in=source_ids)
