"""Named filters of embeddings, and which embeddings grants reach.

An embedding's owner is its agent and user (copies of ``metadata.agentId`` and
``userId`` in indexed columns), and a row may be shared: one of no agent, user or thread,
a document everyone's searches may include. ``visible_rows_q`` is the one condition of
what grants reach among such rows, used by ``EmbeddingQuerySet.visible_to`` and by keyword
search on the keyword index's corpora of embeddings, which carry the same ``agent_id``,
``user_id`` and ``thread_id`` columns. ``is_visible`` answers the same question in Python
for a stored embedding (the stores that keep no rows in the database).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from django.db import models
from django.db.models import Q

from cogitator_memory.embeddings.types import (
    AGENT_ID_KEY,
    THREAD_ID_KEY,
    USER_ID_KEY,
    StoredEmbedding,
)
from cogitator_memory.grants import GrantedQuerySet, Grants, grants_condition

if TYPE_CHECKING:
    from cogitator_memory.embeddings.models import Embedding  # noqa: F401

__all__ = ["EmbeddingQuerySet", "is_visible", "visible_rows_q"]


def visible_rows_q(grants: Grants, *, include_shared: bool = False) -> Q | None:
    """The condition on rows with ``agent_id``, ``user_id`` and ``thread_id`` columns
    (embeddings, the keyword index's corpora of embeddings) of what ``grants`` reach: the
    one rule (``grants.grants_condition``) on the rows' agent and user, plus, when
    ``include_shared``, the rows of no agent, user or thread. ``Q()`` for unrestricted
    grants, None when they reach nothing.

    A row of no agent that names a user or a thread is never shared: the id of a thread or
    user of someone else is not everybody's to see.
    """
    condition = grants_condition(grants, agent_field="agent_id", user_field="user_id")
    if grants.agent_ids is None or not include_shared:
        return condition
    shared = Q(agent_id__isnull=True, user_id__isnull=True, thread_id__isnull=True)
    return shared if condition is None else condition | shared


def _metadata_id(embedding: StoredEmbedding, key: str) -> str | None:
    # As the indexed column holds it (``stores.base.scope_value``): a text, or None.
    value = embedding.metadata.get(key)
    return str(value) if value is not None else None


def is_visible(embedding: StoredEmbedding, grants: Grants, *, include_shared: bool) -> bool:
    """Whether ``grants`` reach this embedding: the rule of ``visible_rows_q``, in Python,
    on the owner its metadata names."""
    if grants.agent_ids is None:
        return True
    agent_id = _metadata_id(embedding, AGENT_ID_KEY)
    user_id = _metadata_id(embedding, USER_ID_KEY)
    if agent_id is None:
        thread_id = _metadata_id(embedding, THREAD_ID_KEY)
        return include_shared and user_id is None and thread_id is None
    return grants.allows(agent_id, user_id)


class EmbeddingQuerySet(GrantedQuerySet["Embedding"]):
    def visible_to(self, grants: Grants, *, include_shared: bool = False) -> Self:
        """The embeddings ``grants`` reach (``visible_rows_q``); with ``include_shared``,
        also the shared ones (of no agent, user or thread)."""
        condition = visible_rows_q(grants, include_shared=include_shared)
        return self.none() if condition is None else self.filter(condition)

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
