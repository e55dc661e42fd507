"""The channels that rank turns: BM25 over the branch, vectors (with recall's
thresholds), the time the input names, the entities of memory it names, the evidence of
the best items and the turns next to the best turns.

Each method ranks candidates of a ``RecallPool`` and records the ranking under its
channel's name (``recall/channels.py`` lists them and their weights).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from cogitator_memory.embeddings.message_index import (
    MESSAGE_SOURCE_TYPE,
    MESSAGES_INDEX,
    message_index_enabled,
)
from cogitator_memory.embeddings.services import EmbeddingService
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.exceptions import CogitatorMemoryError
from cogitator_memory.items.models import Evidence
from cogitator_memory.recall.channels import (
    CHANNEL_DEPTH,
    ENTRY_ENTITY,
    ENTRY_EVIDENCE,
    ENTRY_KEYWORD,
    ENTRY_NEIGHBOR,
    ENTRY_TIME,
    ENTRY_VECTOR,
    SEED_ITEMS,
    SEED_TURNS,
)
from cogitator_memory.recall.named_entities import mentions
from cogitator_memory.recall.pool import CONTEXT_SHARE, RecallPool, entry_key
from cogitator_memory.recall.types import RecallError
from cogitator_memory.recall.vector_scores import cosines, kept_by_thresholds
from cogitator_memory.search.entry_keywords import search_thread_entries
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry
from cogitator_memory.threads.text import entry_text

__all__ = ["TurnChannels"]

logger = logging.getLogger(__name__)


class TurnChannels(RecallPool):
    """The turn channels of a recall run."""

    def entry_keyword(self) -> None:
        terms = list(self.analysis.terms)
        if not terms:
            return
        if self.turns is not None:
            ranked = self._turn_index().ranked(terms, limit=CHANNEL_DEPTH)
        else:
            ranked = self._thread_keyword(self.input, limit=CHANNEL_DEPTH)
        self._rank(ENTRY_KEYWORD, [(entry_key(entry_id), score) for entry_id, score in ranked])

    def _thread_keyword(self, query: str, *, limit: int) -> list[tuple[str, float]]:
        """Thread mode: BM25 over the thread's entries through the keyword index of
        entries (``search.entry_keywords``)."""
        assert self.thread_id is not None
        found = search_thread_entries(
            self.thread_id,
            query,
            limit=limit,
            before_seq=self.before_seq,
            exclude_ids=tuple(self.held),
        )
        allowed = self._thread_entries([entry_id for entry_id, _ in found])
        return [(entry_id, float(score)) for entry_id, score in found if entry_id in allowed]

    def entry_vector(self, given: Mapping[str, float] | None) -> None:
        if given is not None:
            allowed = self._thread_entries(list(given))
            scores = {entry_id: float(given[entry_id]) for entry_id in allowed}
        else:
            service = self.retriever.service
            if service is None:
                return
            try:
                scores = self._turn_cosines(service)
            except (CogitatorMemoryError, ValueError, IndexError) as exc:
                logger.warning("Recall without turn vectors: %s", exc)
                self.errors.append(RecallError("semantic", f"turn vectors: {exc}"))
                return
        read = self._in_context(scores)
        self.wide_cosines = read
        kept = kept_by_thresholds(read, limit=CHANNEL_DEPTH)
        self._rank(ENTRY_VECTOR, [(entry_key(entry_id), score) for entry_id, score in kept])

    def _turn_cosines(self, service: EmbeddingService) -> dict[str, float]:
        query = self.retriever._query_vector(self.input, service)
        if self.thread_id is not None and message_index_enabled() and not self.turns:
            store = self.retriever.store
            hits = store.search(
                query.tolist(),
                limit=CHANNEL_DEPTH * 2,
                filter=EmbeddingFilter(
                    thread_id=self.thread_id,
                    source_type=MESSAGE_SOURCE_TYPE,
                    index=MESSAGES_INDEX,
                ),
            )
            allowed = self._thread_entries([hit.embedding.source_id for hit in hits])
            return {
                hit.embedding.source_id: float(hit.score)
                for hit in hits
                if hit.embedding.source_id in allowed
            }
        turns = self.turns or []
        return cosines(query, self.retriever._turn_vectors(turns, service))

    def _in_context(self, scores: Mapping[str, float]) -> dict[str, float]:
        """History mode: each turn's cosine plus ``CONTEXT_SHARE`` of the best cosine of
        the turns it is read with."""
        if not self.context:
            return dict(scores)
        read: dict[str, float] = {}
        for entry_id, score in scores.items():
            around = [scores.get(other.pk, 0.0) for other in self.context.get(entry_id, ())]
            read[entry_id] = score + CONTEXT_SHARE * max([0.0, *around])
        return read

    def entry_time(self) -> None:
        interval = self.analysis.time
        if interval is None:
            return
        if self.turns is not None:
            inside = [
                entry for entry in self.turns if interval.start <= entry.created_at < interval.end
            ]
        else:
            if not self._thread_visible():
                return
            rows = Entry.objects.filter(
                thread_id=self.thread_id,
                type__in=sorted(CONVERSATION_TYPES),
                created_at__gte=interval.start,
                created_at__lt=interval.end,
            )
            if self.before_seq is not None:
                rows = rows.filter(seq__lt=self.before_seq)
            ids = list(rows.order_by("-seq").values_list("pk", flat=True)[: CHANNEL_DEPTH * 2])
            allowed = self._thread_entries(ids)
            inside = [allowed[entry_id] for entry_id in ids if entry_id in allowed]
        # Within the interval, the turns sharing most words with the input first.
        keyword = self.rankings.get(ENTRY_KEYWORD, [])
        scores = dict(keyword)
        ranked = sorted(
            inside,
            key=lambda entry: (-scores.get(entry_key(entry.pk), 0.0), -entry.seq),
        )
        self._rank(
            ENTRY_TIME,
            [(entry_key(entry.pk), scores.get(entry_key(entry.pk), 0.0)) for entry in ranked],
        )

    def entry_entity(self) -> None:
        if not self.named:
            return
        if self.turns is not None:
            counted = [(entry, mentions(entry_text(entry), self.named)) for entry in self.turns]
            scores = dict(self.rankings.get(ENTRY_KEYWORD, []))
            ranked = sorted(
                ((entry, count) for entry, count in counted if count),
                key=lambda pair: (-pair[1], -scores.get(entry_key(pair[0].pk), 0.0), -pair[0].seq),
            )
            found = [(entry_key(entry.pk), float(count)) for entry, count in ranked]
        else:
            query = " ".join(entity.name for entity in self.named)
            found = [
                (entry_key(entry_id), score)
                for entry_id, score in self._thread_keyword(query, limit=CHANNEL_DEPTH)
            ]
        self._rank(ENTRY_ENTITY, found)

    def entry_evidence(self, fused: Sequence[str]) -> None:
        best_items = [key[len("item:") :] for key in fused if key.startswith("item:")][:SEED_ITEMS]
        if not best_items:
            return
        rows = (
            Evidence.objects.filter(item_id__in=best_items, entry__isnull=False)
            .values_list("item_id", "entry_id")
            .order_by("id")
        )
        order = {item_id: rank for rank, item_id in enumerate(best_items)}
        pairs = sorted(rows, key=lambda pair: order[pair[0]])
        ids = list(dict.fromkeys(entry_id for _, entry_id in pairs))
        allowed = self._thread_entries(ids)
        self._rank(
            ENTRY_EVIDENCE,
            [(entry_key(entry_id), 1.0) for entry_id in ids if entry_id in allowed],
        )

    def entry_neighbor(self, fused: Sequence[str]) -> None:
        """The turns just before and after the best turns: a question and its answer, a
        statement and the reply that names what it is about."""
        best = [key for key in fused if key.startswith("entry:")][:SEED_TURNS]
        if not best:
            return
        found: list[str] = []
        if self.turns is not None:
            position = {entry_key(entry.pk): n for n, entry in enumerate(self.turns)}
            for key in best:
                n = position[key]
                for other in (n - 1, n + 1):
                    if 0 <= other < len(self.turns):
                        found.append(entry_key(self.turns[other].pk))
        else:
            entries = [self.found.entries[key] for key in best]
            parents = [entry.parent_id for entry in entries if entry.parent_id]
            children = list(
                Entry.objects.filter(
                    parent_id__in=[entry.pk for entry in entries], thread_id=self.thread_id
                ).values_list("pk", flat=True)
            )
            allowed = self._thread_entries(parents + children)
            found = [
                entry_key(entry_id) for entry_id in (*parents, *children) if entry_id in allowed
            ]
        found = [key for key in dict.fromkeys(found) if key not in best]
        self._rank(ENTRY_NEIGHBOR, [(key, 1.0) for key in found])
