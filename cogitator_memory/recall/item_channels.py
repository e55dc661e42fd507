"""The channels that rank memory items: BM25 over their text, their vectors (with
recall's thresholds), the entities named, the time they held, and a personalized PageRank
over the graph of items, entities and the knowledge graph (``recall/graph_links.py``).

Each method ranks the items of a ``RecallPool`` and records the ranking under its
channel's name.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from cogitator_memory.exceptions import CogitatorMemoryError
from cogitator_memory.items.models import Entity, MemoryItem
from cogitator_memory.items.vectors import item_text, item_vectors
from cogitator_memory.keywords.tokenizer import tokenize
from cogitator_memory.recall.channels import (
    CHANNEL_DEPTH,
    ITEM_ENTITY,
    ITEM_GRAPH,
    ITEM_KEYWORD,
    ITEM_TIME,
    ITEM_VECTOR,
    SEED_ITEMS,
)
from cogitator_memory.recall.graph_links import GraphLinks, graph_links, subject_keys
from cogitator_memory.recall.graph_walk import personalized_pagerank
from cogitator_memory.recall.keyword_scores import InMemoryBM25
from cogitator_memory.recall.named_entities import EntityMatcher, mentions
from cogitator_memory.recall.pool import RecallPool, item_key
from cogitator_memory.recall.types import RecallError
from cogitator_memory.recall.vector_scores import cosines, kept_by_thresholds

if TYPE_CHECKING:
    from cogitator_memory.grants import MemoryScope

__all__ = ["ItemChannels"]

logger = logging.getLogger(__name__)


class ItemChannels(RecallPool):
    """The item channels of a recall run."""

    # The scope whose knowledge graph the walk reads (``load_items``).
    graph_scope: MemoryScope | None = None

    def item_keyword(self) -> None:
        if not self.items or not self.analysis.terms:
            return
        index = InMemoryBM25([(item.pk, tokenize(item_text(item))) for item in self.items])
        ranked = index.ranked(list(self.analysis.terms), limit=CHANNEL_DEPTH)
        self._rank(ITEM_KEYWORD, [(item_key(item_id), score) for item_id, score in ranked])

    def item_vector(self, given: Mapping[str, float] | None) -> None:
        if not self.items:
            return
        if given is not None:
            scores = {item.pk: float(given[item.pk]) for item in self.items if item.pk in given}
        else:
            service = self.retriever.service
            if service is None:
                return
            try:
                query = self.retriever._query_vector(self.input, service)
                vectors = item_vectors(self.items, service=service, store=self.retriever.store)
                scores = cosines(
                    query,
                    {
                        item_id: np.asarray(vector, dtype=np.float32)
                        for item_id, vector in vectors.items()
                    },
                )
            except (CogitatorMemoryError, ValueError, IndexError) as exc:
                logger.warning("Recall without item vectors: %s", exc)
                self.errors.append(RecallError("semantic", f"item vectors: {exc}"))
                return
        kept = kept_by_thresholds(scores, limit=CHANNEL_DEPTH)
        self._rank(ITEM_VECTOR, [(item_key(item_id), score) for item_id, score in kept])

    def item_entity(self) -> None:
        if not self.named or not self.items:
            return
        named_ids = {entity.id for entity in self.named}
        found = []
        for item in self.items:
            count = (item.subject_id in named_ids) * 2 + mentions(
                f"{item.value} {item.content}", self.named
            )
            if count:
                found.append((item, count))
        found.sort(key=lambda pair: (-pair[1], -pair[0].valid_from.timestamp(), pair[0].pk))
        self._rank(ITEM_ENTITY, [(item_key(item.pk), float(count)) for item, count in found])

    def item_time(self) -> None:
        interval = self.analysis.time
        if interval is None or not self.items:
            return
        inside = [
            item
            for item in self.items
            if item.valid_from < interval.end
            and (item.valid_to is None or item.valid_to > interval.start)
        ]

        # Items that began within the interval first, then the narrowest validity.
        def order(item: MemoryItem) -> tuple[int, float, str]:
            began_inside = interval.start <= item.valid_from
            end = item.valid_to or self.anchor
            return (0 if began_inside else 1, (end - item.valid_from).total_seconds(), item.pk)

        self._rank(ITEM_TIME, [(item_key(item.pk), 1.0) for item in sorted(inside, key=order)])

    def load_items(self, items: Sequence[MemoryItem] | None, scope: MemoryScope | None) -> None:
        # The walk reads the knowledge graph of the run's scope (none without one).
        self.graph_scope = scope
        super().load_items(items, scope)

    def item_graph(self, fused: Sequence[str]) -> None:
        """Personalized PageRank over items, entities and the knowledge graph's active
        nodes and edges (an item links its subject and the entities its value names, a
        node the entity it mirrors, an edge its nodes), seeded with the entities and nodes
        named and the best items."""
        if not self.items:
            return
        entities = {item.subject_id: item.subject for item in self.items}
        links = self._graph_links(entities)
        seeds: dict[str, float] = {f"entity:{entity.id}": 1.0 for entity in self.named}
        seeds.update(dict.fromkeys(links.named, 1.0))
        best_items = [key for key in fused if key.startswith("item:")][:SEED_ITEMS]
        for rank, key in enumerate(best_items, start=1):
            seeds[key] = 1.0 / rank
        if not seeds:
            return
        matcher = EntityMatcher(
            (entity.pk, entity.name, entity.aliases or []) for entity in entities.values()
        )
        edges = list(links.edges)
        for item in self.items:
            edges.append((item_key(item.pk), f"entity:{item.subject_id}"))
            for entity in matcher.named_in(f"{item.value} {item.content}"):
                if entity.id != item.subject_id:
                    edges.append((item_key(item.pk), f"entity:{entity.id}"))
        ranks = personalized_pagerank(edges, seeds)
        ranked = sorted(
            ((key, score) for key, score in ranks.items() if key.startswith("item:")),
            key=lambda pair: (-pair[1], pair[0]),
        )
        self._rank(ITEM_GRAPH, ranked)

    def _graph_links(self, entities: Mapping[str, Entity]) -> GraphLinks:
        """The knowledge graph's links for the walk (none without a scope: items given
        alone name no graph)."""
        if self.graph_scope is None:
            return GraphLinks()
        return graph_links(
            self.graph_scope,
            input=self.input,
            as_of=self.anchor,
            grants=self.grants,
            entities=subject_keys({pk: entity.name for pk, entity in entities.items()}),
        )
