"""The deep ranks of recall: the hits past the first ``DEEP_START``, from a wider pool.

The first ``DEEP_START`` hits are those of the fused, rescored and diversified ranking
(``search/recall_run.py``), unchanged. The ranks after them are filled from the same
channels fused again with two more rankings of turns, which are only ever used there:

- ``entry_vector_wide``: every turn by its vector score, with no threshold. The vector
  channel keeps a cosine of ``VECTOR_FLOOR`` or more and ``VECTOR_SHARE`` of the best (the
  specification's thresholds), which is right for the turns a context shows first and
  leaves out, past them, the turns a small model scores lower than the words deserve.
- ``entry_second_hop``: BM25 over the turns for the input's terms and the terms the best
  turns share that the input lacks (the names and things its answer is about), so the
  other turns of a question whose answer is spread over several ("What has Ana read?")
  are found through the words of those already found.

The pool's hits are rescored as the first ones are (``search/rescoring.py``) and follow
the first ``DEEP_START`` in that order, without the ones already placed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from cogitator_memory.search.fusion import reciprocal_rank_fusion
from cogitator_memory.search.recall_pool import CHANNEL_DEPTH, RecallPool, entry_key
from cogitator_memory.search.rescoring import FUSION_K, Rescoring

__all__ = ["DEEP_CHANNEL_WEIGHTS", "DEEP_START", "DeepRanks"]

# The hits the fused ranking places; the ranks after them come from the wider pool.
DEEP_START = 20
# The weights of the deep rankings in the second fusion.
DEEP_CHANNEL_WEIGHTS: Mapping[str, float] = {
    "entry_vector_wide": 1.0,
    "entry_second_hop": 0.5,
}
# Second hop: the best turns whose words are read, and how many of their words (those
# at least two of them hold, that the input lacks, rarest first) are added to the input's.
HOP_SEEDS = 5
HOP_TERMS = 8


class DeepRanks(Rescoring, RecallPool):
    """The ranks of a recall run past the first ``DEEP_START``."""

    def deep_ranks(self, placed: Sequence[str]) -> list[tuple[str, float]]:
        """The hits after ``placed`` (the first ``DEEP_START``), best first, with their
        scores: the channels' rankings and the deep ones fused and rescored, without
        ``placed``. The deep rankings join the run's rankings (a hit tells them)."""
        for channel, ranked in (
            ("entry_vector_wide", self._wide_vector_ranking()),
            ("entry_second_hop", self._second_hop_ranking(placed)),
        ):
            if ranked:
                self.rankings[channel] = ranked
        fused = reciprocal_rank_fusion(
            {channel: [key for key, _ in ranked] for channel, ranked in self.rankings.items()},
            weights={
                channel: DEEP_CHANNEL_WEIGHTS[channel]
                if channel in DEEP_CHANNEL_WEIGHTS
                else self.analysis.weights.get(channel, 1.0)
                for channel in self.rankings
            },
            k=FUSION_K,
        )
        scores = {hit.id: hit.score for hit in fused}
        skip = set(placed)
        keys = [hit.id for hit in fused if hit.id not in skip]
        rescored = self._rescored(keys, scores)
        return sorted(((key, rescored[key]) for key in keys), key=lambda pair: (-pair[1], pair[0]))

    def _wide_vector_ranking(self) -> list[tuple[str, float]]:
        scores = self.wide_cosines
        ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:CHANNEL_DEPTH]
        return [(entry_key(entry_id), score) for entry_id, score in ranked]

    def _second_hop_ranking(self, placed: Sequence[str]) -> list[tuple[str, float]]:
        if self.turns is None:
            return []
        seeds = [key for key in placed if key.startswith("entry:")][:HOP_SEEDS]
        if len(seeds) < 2:
            return []
        index = self._turn_index()
        asked = set(self.analysis.terms)
        shared: Counter[str] = Counter()
        for key in seeds:
            shared.update(set(self._tokens_of(key)) - asked)
        documents = len(index.ids) or 1
        frequency = {
            term: sum(1 for held in index.token_sets if term in held)
            for term, count in shared.items()
            if count >= 2
        }
        # Rare words only: a word in a tenth of the turns or more says nothing of them.
        added = sorted(
            (term for term, df in frequency.items() if 0 < df < documents / 10),
            key=lambda term: (frequency[term], term),
        )[:HOP_TERMS]
        if not added:
            return []
        ranked = index.ranked([*self.analysis.terms, *added], limit=CHANNEL_DEPTH)
        return [(entry_key(entry_id), score) for entry_id, score in ranked]
