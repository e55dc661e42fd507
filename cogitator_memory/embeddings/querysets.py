"""Named filters of embeddings, and which embeddings grants reach.

An embedding's owner is its agent and user (copies of ``metadata.agentId`` and
``userId`` in indexed columns), and a row may be shared: one of no agent, user or thread,
a document everyone's searches may include. ``grants.visible_rows_q`` is the one
condition of what grants reach among such rows, used by ``EmbeddingQuerySet.visible_to``
and by the keyword index's corpora of embeddings, which carry the same ``agent_id``,
``user_id`` and ``thread_id`` columns (``grants.SharedRowsQuerySet``). ``is_visible``
answers the same question in Python for a stored embedding (the stores that keep no rows
in the database).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogitator_memory.embeddings.types import (
    AGENT_ID_KEY,
    THREAD_ID_KEY,
    USER_ID_KEY,
    StoredEmbedding,
)
from cogitator_memory.grants import Grants, SharedRowsQuerySet

if TYPE_CHECKING:
    from cogitator_memory.embeddings.models import Embedding  # noqa: F401

__all__ = ["EmbeddingQuerySet", "is_visible"]


def _metadata_id(embedding: StoredEmbedding, key: str) -> str | None:
    # As the indexed column holds it (``stores.base.scope_value``): a text, or None.
    value = embedding.metadata.get(key)
    return str(value) if value is not None else None


def is_visible(embedding: StoredEmbedding, grants: Grants, *, include_shared: bool) -> bool:
    """Whether ``grants`` reach this embedding: the rule of ``grants.visible_rows_q``, in Python,
    on the owner its metadata names."""
    if grants.agent_ids is None:
        return True
    agent_id = _metadata_id(embedding, AGENT_ID_KEY)
    user_id = _metadata_id(embedding, USER_ID_KEY)
    if agent_id is None:
        thread_id = _metadata_id(embedding, THREAD_ID_KEY)
        return include_shared and user_id is None and thread_id is None
    return grants.allows(agent_id, user_id)


class EmbeddingQuerySet(SharedRowsQuerySet["Embedding"]):
    def of_sources(self, source_ids: list[str]) -> EmbeddingQuerySet:
        """Embeddings of any of these sources."""
        return self.filter(source_id__in=source_ids)
