"""Semantic search (the query's vector against the store) and hybrid search (keyword and
semantic, fused by reciprocal rank), within the same filters and scope.

Hybrid search runs the channels it can: without an embedding service, or when the
service or the store's vectors fail, it is the keyword channel alone, as the
specification allows ("searches without vectors when there is no embeddingService"), and
``HybridSearch.errors`` says why the vector channel is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.services import (
    EmbeddingService,
    get_embedding_service,
)
from cogitator_memory.embeddings.stores.base import check_vector
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore, SearchHit
from cogitator_memory.exceptions import (
    CogitatorMemoryError,
    EmbeddingServiceError,
    EmbeddingsNotConfigured,
    InvalidInput,
    KeywordSearchUnavailable,
    VectorSearchUnavailable,
)
from cogitator_memory.grants import Grants
from cogitator_memory.limits import check_limit
from cogitator_memory.search.bm25 import (
    check_query,
    keyword_search,
)
from cogitator_memory.search.fusion import (
    DEFAULT_K,
    check_k,
    check_weights,
    reciprocal_rank_fusion,
)
from cogitator_memory.search.scoping import search_visible

logger = logging.getLogger(__name__)

KEYWORD = "keyword"
VECTOR = "vector"
CHANNELS = (KEYWORD, VECTOR)
DEFAULT_WEIGHTS: Mapping[str, float] = {KEYWORD: 1.0, VECTOR: 1.0}
# Each channel ranks this many times the hits asked for (at least MIN_CHANNEL_DEPTH), so
# that an item ranked low by one channel and high by the other can still rise.
CHANNEL_DEPTH_FACTOR = 3
MIN_CHANNEL_DEPTH = 30


@dataclass(frozen=True)
class HybridSearch:
    """The fused hits, best first (``score``: the fused score), the channels that ran, and
    why any other did not."""

    hits: list[SearchHit]
    channels: tuple[str, ...]
    errors: dict[str, str] = field(default_factory=dict)


def embed_query(query: str, service: EmbeddingService) -> list[float]:
    """The vector of ``query``; ``EmbeddingServiceError`` when the service fails or
    answers with something other than one vector."""
    vectors = service.embed([query])
    if len(vectors) != 1:
        raise EmbeddingServiceError(
            service.provider, f"expected one vector for one text, got {len(vectors)}"
        )
    try:
        return check_vector(vectors[0]).tolist()
    except InvalidInput as exc:
        raise EmbeddingServiceError(service.provider, f"bad vector: {exc.message}") from exc


def _vector_ready(store: EmbeddingStore, vector: list[float]) -> None:
    status = store.vector_status()
    if not status.available:
        raise VectorSearchUnavailable(status.reason or "the store reports no vectors")
    if status.dimensions is not None and status.dimensions != len(vector):
        raise VectorSearchUnavailable(
            f"the query's vector has {len(vector)} dimensions and the store's have "
            f"{status.dimensions}"
        )


def semantic_search(
    query: str,
    *,
    limit: int = 10,
    filter: EmbeddingFilter | None = None,
    store: EmbeddingStore | None = None,
    service: EmbeddingService | None = None,
    threshold: float | None = None,
    grants: Grants | None = None,
    include_shared: bool = True,
) -> list[SearchHit]:
    """The ``limit`` embeddings nearest to the vector of ``query`` (cosine), best first,
    among those ``filter`` admits and ``grants`` reach (as in ``keyword_search``).

    ``service``: the configured embedding service when None. Raises ``InvalidInput``
    for an empty query or a bad limit, ``EmbeddingsNotConfigured`` when there is no
    service, ``EmbeddingServiceError`` when it fails, ``VectorSearchUnavailable`` when the
    store cannot search vectors of the query's size.
    """
    check_query(query)
    check_limit(limit)
    service = service if service is not None else get_embedding_service()
    if service is None:
        raise EmbeddingsNotConfigured()
    vector = embed_query(query, service)
    store = store if store is not None else get_embedding_store()
    _vector_ready(store, vector)

    def run(store_filter: EmbeddingFilter | None, fetch: int) -> list[SearchHit]:
        return store.search(vector, limit=fetch, threshold=threshold, filter=store_filter)

    return search_visible(
        run, limit=limit, filter=filter, grants=grants, include_shared=include_shared
    )


def _channel_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    chosen = {**DEFAULT_WEIGHTS, **(weights or {})}
    check_weights(chosen)
    unknown = sorted(set(chosen) - set(CHANNELS))
    if unknown:
        raise InvalidInput(
            {"weights": f"Unknown channels {unknown}; the channels are {list(CHANNELS)}."}
        )
    return chosen


def hybrid_search(
    query: str,
    *,
    limit: int = 10,
    filter: EmbeddingFilter | None = None,
    store: EmbeddingStore | None = None,
    service: EmbeddingService | None = None,
    weights: Mapping[str, float] | None = None,
    k: float = DEFAULT_K,
    grants: Grants | None = None,
    include_shared: bool = True,
) -> HybridSearch:
    """BM25 and vector search of ``query``, fused by reciprocal rank (``fusion.py``),
    among the embeddings ``filter`` admits and ``grants`` reach.

    ``weights``: per channel (``keyword``, ``vector``), 1 by default. The vector channel is
    left out, and the reason put in ``errors``, when there is no embedding service, it
    fails, or the store cannot search vectors; the keyword channel when the store has no
    keyword search. Raises ``InvalidInput`` for an empty query, a bad limit or bad
    weights, and the keyword channel's error when neither channel can run.
    """
    check_query(query)
    check_limit(limit)
    chosen = _channel_weights(weights)
    check_k(k)
    store = store if store is not None else get_embedding_store()
    depth = max(limit * CHANNEL_DEPTH_FACTOR, MIN_CHANNEL_DEPTH)
    rankings: dict[str, list[SearchHit]] = {}
    failures: dict[str, CogitatorMemoryError] = {}
    try:
        rankings[KEYWORD] = keyword_search(
            query,
            limit=depth,
            filter=filter,
            store=store,
            grants=grants,
            include_shared=include_shared,
        )
    except KeywordSearchUnavailable as exc:
        failures[KEYWORD] = exc
    service = service if service is not None else get_embedding_service()
    if service is None:
        failures[VECTOR] = EmbeddingsNotConfigured()
    else:
        try:
            rankings[VECTOR] = semantic_search(
                query,
                limit=depth,
                filter=filter,
                store=store,
                service=service,
                grants=grants,
                include_shared=include_shared,
            )
        except (EmbeddingServiceError, VectorSearchUnavailable) as exc:
            logger.warning("Hybrid search without vectors: %s", exc)
            failures[VECTOR] = exc
    if not rankings:
        raise failures[KEYWORD]
    by_id = {hit.embedding.id: hit.embedding for hits in rankings.values() for hit in hits}
    fused = reciprocal_rank_fusion(
        {channel: [hit.embedding.id for hit in hits] for channel, hits in rankings.items()},
        weights=chosen,
        k=k,
    )
    return HybridSearch(
        hits=[SearchHit(embedding=by_id[item.id], score=item.score) for item in fused[:limit]],
        channels=tuple(channel for channel in CHANNELS if channel in rankings),
        errors={channel: exc.message for channel, exc in failures.items()},
    )
