"""Which embeddings a caller's scope lets a search return.

An ``EmbeddingFilter`` narrows a search the way the specification describes (an agent's
rows and the rows of no agent); a ``Scope`` is the security boundary on top of it: the
agents of the caller's grants and, where a grant names users, only those users' rows.

A row is visible to a restricted scope when

- its agent is granted, and the grant names no users or names the row's user; or
- ``include_shared`` is on and the row belongs to no agent, user or thread (a shared
  document). A row of no agent that names a user or a thread is never shared: the id of a
  thread or user of someone else is not everybody's to see.

Rows in the database are filtered with ``visible_q`` inside the query. Other stores can
only take an ``EmbeddingFilter``, so ``search_visible`` narrows the filter as far as it
can, drops what the scope does not allow from each answer, and asks again for more until
it has ``limit`` visible hits or the store has no more.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from django.db.models import Q

from cogitator_memory.embeddings.models import AGENT_ID_KEY, THREAD_ID_KEY, USER_ID_KEY
from cogitator_memory.embeddings.stores.base import scope_value
from cogitator_memory.embeddings.types import EmbeddingFilter, SearchHit, StoredEmbedding
from cogitator_memory.scope import Scope

# The most hits ``search_visible`` asks a store for at once; past it, what was found is
# returned. Each round asks for four times as many as the last.
MAX_FETCH = 10_000
FETCH_GROWTH = 4

SearchRun = Callable[[EmbeddingFilter | None, int], list[SearchHit]]


def visible_q(scope: Scope, *, include_shared: bool) -> Q | None:
    """The condition on ``Embedding`` rows of what ``scope`` may see; None when it may see
    nothing. An unrestricted scope sees every row (``Q()``)."""
    if scope.agent_ids is None:
        return Q()
    every_user = sorted(a for a in scope.agent_ids if scope.user_ids.get(a) is None)
    parts: list[Q] = []
    if every_user:
        parts.append(Q(agent_id__in=every_user))
    for agent_id in sorted(scope.agent_ids):
        users = scope.user_ids.get(agent_id)
        if users is not None:
            parts.append(Q(agent_id=agent_id, user_id__in=sorted(users)))
    if include_shared:
        parts.append(Q(agent_id__isnull=True, user_id__isnull=True, thread_id__isnull=True))
    if not parts:
        return None
    condition = parts[0]
    for part in parts[1:]:
        condition |= part
    return condition


def is_visible(embedding: StoredEmbedding, scope: Scope, *, include_shared: bool) -> bool:
    """Whether ``scope`` may see this embedding (the rule of ``visible_q``, in Python)."""
    if scope.agent_ids is None:
        return True
    agent_id = scope_value(embedding.metadata, AGENT_ID_KEY)
    user_id = scope_value(embedding.metadata, USER_ID_KEY)
    if agent_id is None:
        thread_id = scope_value(embedding.metadata, THREAD_ID_KEY)
        return include_shared and user_id is None and thread_id is None
    if agent_id not in scope.agent_ids:
        return False
    users = scope.user_ids.get(agent_id)
    return users is None or (user_id is not None and user_id in users)


def _granted_agents(filter: EmbeddingFilter | None, scope: Scope) -> frozenset[str]:
    agents = scope.agent_ids or frozenset()
    if filter is not None and filter.agent_id is not None:
        return agents & {filter.agent_id}
    return agents


def narrowed_filter(filter: EmbeddingFilter | None, scope: Scope) -> EmbeddingFilter | None:
    """``filter`` with the one agent (and user) ``scope`` allows, where it allows only one,
    so that a store leaves the rows of other agents out itself."""
    if scope.agent_ids is None:
        return filter
    agents = _granted_agents(filter, scope)
    if len(agents) != 1:
        return filter
    (agent_id,) = agents
    base = filter or EmbeddingFilter()
    narrowed = dataclasses.replace(base, agent_id=agent_id)
    users = scope.user_ids.get(agent_id)
    if users is not None and len(users) == 1 and base.user_id is None:
        (user_id,) = users
        narrowed = dataclasses.replace(narrowed, user_id=user_id)
    return narrowed


def sees_nothing(filter: EmbeddingFilter | None, scope: Scope, *, include_shared: bool) -> bool:
    """Whether no row ``filter`` admits can be visible to ``scope``."""
    if scope.agent_ids is None or include_shared:
        return False
    return not _granted_agents(filter, scope)


def search_visible(
    run: SearchRun,
    *,
    limit: int,
    filter: EmbeddingFilter | None,
    scope: Scope | None,
    include_shared: bool,
) -> list[SearchHit]:
    """The best ``limit`` hits of ``run(filter, n)`` that ``scope`` may see.

    ``run`` returns hits best first. The visible hits among a store's best ``n`` are the
    best visible hits, so asking for more until ``limit`` of them are visible (or the
    store returns fewer than asked) gives the same answer as a search inside the scope.
    """
    if scope is None or scope.agent_ids is None:
        return run(filter, limit)
    if sees_nothing(filter, scope, include_shared=include_shared):
        return []
    store_filter = narrowed_filter(filter, scope)
    fetch = limit
    while True:
        hits = run(store_filter, fetch)
        visible = [
            hit for hit in hits if is_visible(hit.embedding, scope, include_shared=include_shared)
        ]
        if len(visible) >= limit or len(hits) < fetch or fetch >= MAX_FETCH:
            return visible[:limit]
        fetch = min(fetch * FETCH_GROWTH, MAX_FETCH)
