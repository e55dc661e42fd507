"""Which embeddings a caller's grants let a search return.

An ``EmbeddingFilter`` narrows a search the way the specification describes (an agent's
rows and the rows of no agent); ``Grants`` are the security boundary on top of it: the
agents of the caller's grants and, where a grant names users, only those users' rows.

A row is visible to restricted grants when

- its agent is granted, and the grant names no users or names the row's user; or
- ``include_shared`` is on and the row belongs to no agent, user or thread (a shared
  document). A row of no agent that names a user or a thread is never shared: the id of a
  thread or user of someone else is not everybody's to see.

The rule is the embeddings' own (``embeddings/querysets.py``): rows in the database are
filtered with ``Embedding.objects.visible_to(grants, include_shared=...)`` inside the
query. Other stores can only take an ``EmbeddingFilter``, so ``search_visible`` narrows the
filter as far as it can, drops what the grants do not reach from each answer
(``is_visible``, the same rule in Python), and asks again for more until it has ``limit``
visible hits or the store has no more.

The owner kept in a row is a copy; the thread is the truth. Every answer is checked
against it (``still_current``): a hit naming a thread is returned only if the caller can
open that thread now, and a hit of a registered source (``embeddings/sources.py``: a
message only while its entry exists unredacted, an item's only while the item exists)
only while its source stands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from django.db.models import Q

from cogitator_memory.embeddings.querysets import is_visible
from cogitator_memory.embeddings.sources import (
    VectorSource,
    source_of,
    standing_ids,
    standing_q,
)
from cogitator_memory.embeddings.stores.base import scope_value
from cogitator_memory.embeddings.types import THREAD_ID_KEY, EmbeddingFilter, SearchHit
from cogitator_memory.grants import Grants
from cogitator_memory.threads.models import Thread

# The most hits ``search_visible`` asks a store for at once; past it, what was found is
# returned. Each round asks for four times as many as the last.
MAX_FETCH = 10_000
FETCH_GROWTH = 4

SearchRun = Callable[[EmbeddingFilter | None, int], list[SearchHit]]


def current_q(grants: Grants | None) -> Q:
    """``still_current`` as a condition on ``Embedding`` rows, for searches the database
    runs itself (keyword search)."""
    return standing_q() & open_threads_q(grants)


def open_threads_q(grants: Grants | None) -> Q:
    """The thread part of ``current_q``: for a restricted scope, rows of no thread or of a
    thread the caller may open now. Also a condition on the keyword index's corpora,
    which carry the same ``thread_id`` column."""
    if grants is None or grants.agent_ids is None:
        return Q()
    open_threads = Thread.objects.visible_to(grants).values("pk")
    return Q(thread_id__isnull=True) | Q(thread_id__in=open_threads)


def still_current(hits: list[SearchHit], grants: Grants | None) -> list[SearchHit]:
    """The hits whose sources stand now: a hit of a registered source
    (``embeddings/sources.py``) only while its source stands (a message's entry exists
    unredacted, an item exists), and, for restricted ``grants``, a hit naming a thread
    only while that thread exists and the caller may open it. Copies of a thread's owner
    kept with its vectors follow the thread in the same transaction (or, outside the
    database, shortly after); this check makes the thread's current owner the one that
    counts either way. One query per source type among the hits, and one for the
    threads, whatever the number of hits."""
    asked: dict[tuple[str, str], tuple[VectorSource, set[str]]] = {}
    for hit in hits:
        source = source_of(hit.embedding)
        if source is not None:
            asked.setdefault(source.key, (source, set()))[1].add(hit.embedding.source_id)
    standing = {key: standing_ids(source, ids) for key, (source, ids) in asked.items()}
    restricted = grants if grants is not None and grants.agent_ids is not None else None
    thread_ids = {
        thread_id
        for hit in hits
        if (thread_id := scope_value(hit.embedding.metadata, THREAD_ID_KEY)) is not None
    }
    open_threads = (
        set(
            Thread.objects.visible_to(restricted)
            .filter(pk__in=thread_ids)
            .values_list("pk", flat=True)
        )
        if restricted is not None and thread_ids
        else set()
    )

    def stands(hit: SearchHit) -> bool:
        embedding = hit.embedding
        source = source_of(embedding)
        if source is not None and embedding.source_id not in standing[source.key]:
            return False
        thread_id = scope_value(embedding.metadata, THREAD_ID_KEY)
        return restricted is None or thread_id is None or thread_id in open_threads

    return [hit for hit in hits if stands(hit)]


def _granted_agents(filter: EmbeddingFilter | None, grants: Grants) -> frozenset[str]:
    agents = grants.agent_ids or frozenset()
    if filter is not None and filter.agent_id is not None:
        return agents & {filter.agent_id}
    return agents


def narrowed_filter(filter: EmbeddingFilter | None, grants: Grants) -> EmbeddingFilter | None:
    """``filter`` with the one agent (and user) ``grants`` allow, where they allow only one,
    so that a store leaves the rows of other agents out itself."""
    if grants.agent_ids is None:
        return filter
    agents = _granted_agents(filter, grants)
    if len(agents) != 1:
        return filter
    (agent_id,) = agents
    base = filter or EmbeddingFilter()
    narrowed = dataclasses.replace(base, agent_id=agent_id)
    users = grants.user_ids.get(agent_id)
    if users is not None and len(users) == 1 and base.user_id is None:
        (user_id,) = users
        narrowed = dataclasses.replace(narrowed, user_id=user_id)
    return narrowed


def sees_nothing(filter: EmbeddingFilter | None, grants: Grants, *, include_shared: bool) -> bool:
    """Whether no row ``filter`` admits can be visible to ``grants``."""
    if grants.agent_ids is None or include_shared:
        return False
    return not _granted_agents(filter, grants)


def search_visible(
    run: SearchRun,
    *,
    limit: int,
    filter: EmbeddingFilter | None,
    grants: Grants | None,
    include_shared: bool,
) -> list[SearchHit]:
    """The best ``limit`` hits of ``run(filter, n)`` that ``grants`` reach and whose
    sources stand now (``still_current``).

    ``run`` returns hits best first. The visible hits among a store's best ``n`` are the
    best visible hits, so asking for more until ``limit`` of them are visible (or the
    store returns fewer than asked) gives the same answer as a search inside the scope.
    """
    restricted = grants if grants is not None and grants.agent_ids is not None else None
    if restricted is not None and sees_nothing(filter, restricted, include_shared=include_shared):
        return []
    store_filter = narrowed_filter(filter, restricted) if restricted is not None else filter
    fetch = limit
    while True:
        hits = run(store_filter, fetch)
        visible = [
            hit
            for hit in hits
            if restricted is None
            or is_visible(hit.embedding, restricted, include_shared=include_shared)
        ]
        visible = still_current(visible, grants)
        if len(visible) >= limit or len(hits) < fetch or fetch >= MAX_FETCH:
            return visible[:limit]
        fetch = min(fetch * FETCH_GROWTH, MAX_FETCH)
