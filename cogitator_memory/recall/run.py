"""One recall search: ``RecallRun`` runs the channels of turns and items, fuses them,
follows the best hits (the item graph, evidence, neighbours), fuses again, rescores, lays
the best hits out for diversity, reranks the best and, past the context builder's ranks,
puts the turns of a speaker the input names first (``recall/retriever.py``'s docstring says
what comes back).
"""

from __future__ import annotations

from collections.abc import Mapping

from cogitator_memory.recall.channels import RERANKER
from cogitator_memory.recall.item_channels import ItemChannels
from cogitator_memory.recall.rerank import maximal_marginal_relevance
from cogitator_memory.recall.rescoring import (
    CONTEXT_RANKS,
    MMR_BALANCE,
    MMR_CHOSEN,
    MMR_DEPTH,
    Rescoring,
)
from cogitator_memory.recall.turn_channels import TurnChannels
from cogitator_memory.recall.types import ChannelScore, RecallHit, Retrieval

__all__ = ["RecallRun"]


class RecallRun(TurnChannels, ItemChannels, Rescoring):
    """One ``retrieve``: the channels, fusion, rescoring and the hits."""

    def search(
        self,
        *,
        cosines: Mapping[str, float] | None,
        item_cosines: Mapping[str, float] | None,
        limit: int,
    ) -> Retrieval:
        self._reranked = {}
        self.entry_keyword()
        self.entry_vector(cosines)
        self.entry_time()
        self.entry_entity()
        self.item_keyword()
        self.item_vector(item_cosines)
        self.item_entity()
        self.item_time()
        first = self._fuse()
        self.item_graph(first)
        self.entry_evidence(first)
        self.entry_neighbor(first)
        fused = self._fuse()
        rescored = self._rescored(fused)
        ordered = sorted(fused, key=lambda key: (-rescored[key], key))
        diverse = (
            maximal_marginal_relevance(
                ordered[:MMR_DEPTH],
                [rescored[key] for key in ordered[:MMR_DEPTH]],
                self._similarity,
                balance=MMR_BALANCE,
                limit=MMR_CHOSEN,
            )
            + ordered[MMR_DEPTH:]
        )
        final = self._rerank_with_model(diverse)
        if limit > CONTEXT_RANKS:
            final = final[:CONTEXT_RANKS] + self._speaker_first(final[CONTEXT_RANKS:])
        final = final[:limit]
        self._places = {
            channel: {
                key: ChannelScore(rank=rank, score=float(score))
                for rank, (key, score) in reversed(list(enumerate(ranked, start=1)))
            }
            for channel, ranked in self.rankings.items()
        }
        return Retrieval(
            analysis=self.analysis,
            hits=[self._hit(key, rescored[key]) for key in final],
            errors=self.errors,
        )

    def _hit(self, key: str, score: float) -> RecallHit:
        channels = {
            channel: places[key] for channel, places in self._places.items() if key in places
        }
        if key in self._reranked:
            channels[RERANKER] = ChannelScore(
                rank=sorted(self._reranked.values(), reverse=True).index(self._reranked[key]) + 1,
                score=self._reranked[key],
            )
        if key.startswith("entry:"):
            entry = self.found.entries[key]
            return RecallHit(kind="entry", id=entry.pk, score=score, channels=channels, entry=entry)
        item = self.found.items[key]
        return RecallHit(kind="item", id=item.pk, score=score, channels=channels, item=item)
