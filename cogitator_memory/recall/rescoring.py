"""Fusion and rescoring of recall's hits: the channels' rankings fused by weighted
reciprocal rank, each hit's score scaled by the share of the input's words it holds, by
recency, by a speaker the input names and by ``times_retrieved``; the similarity MMR lays
the hits out by; the ``Reranker`` seam over the best ``RERANK_DEPTH``; and the order of the
ranks past the context builder's (``CONTEXT_RANKS``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from functools import cached_property

from cogitator_memory.items.vectors import item_text
from cogitator_memory.keywords.tokenizer import STOPWORDS, tokenize, words
from cogitator_memory.recall.pool import RecallPool, turn_text
from cogitator_memory.recall.rerank import RERANK_DEPTH
from cogitator_memory.recall.types import RecallError
from cogitator_memory.search.fusion import reciprocal_rank_fusion
from cogitator_memory.threads.models import Entry

__all__ = [
    "CONTEXT_RANKS",
    "COVERAGE_WEIGHT",
    "FUSION_K",
    "MMR_BALANCE",
    "MMR_CHOSEN",
    "MMR_DEPTH",
    "QUESTION_WORDS",
    "RECENCY_WEIGHT",
    "RETRIEVED_WEIGHT",
    "SPEAKER_WEIGHT",
    "Rescoring",
]

logger = logging.getLogger(__name__)

# Reciprocal-rank fusion's k (Cormack et al.'s 60).
FUSION_K = 60
# Rerank: a hit's fused score times (1 + COVERAGE_WEIGHT x the share of the turn's content
# words it holds) x (1 + RECENCY_WEIGHT x how recent it is, 0 to 1) x (1 + RETRIEVED_WEIGHT
# x log(1 + times_retrieved)).
COVERAGE_WEIGHT = 0.5
RECENCY_WEIGHT = 0.05
RETRIEVED_WEIGHT = 0.05
# A turn said by someone the input names ("What did Ana say about...") is scaled by
# 1 + SPEAKER_WEIGHT.
SPEAKER_WEIGHT = 0.3
# MMR: the share of relevance against novelty, over the best MMR_DEPTH hits, of which it
# chooses the first MMR_CHOSEN: the context builder's hits and those a reranker reads.
# Past them hits follow their scores; laid out for diversity there they lost more turns of
# a search that reads deeper than they brought.
MMR_BALANCE = 0.9
MMR_DEPTH = 100
MMR_CHOSEN = RERANK_DEPTH
# The hits the context builder asks for (``context.recall_blocks.RECALL_LIMIT``). Past these
# ranks, which a deeper search never moves, the turns of a speaker the input names come
# before those of others (``Rescoring._speaker_first``).
CONTEXT_RANKS = 20
# Words of a question that say what kind it is, not what it is about: not counted in the
# share of the turn's words a hit holds.
QUESTION_WORDS = frozenset(
    [
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "did",
        "do",
        "does",
        "was",
        "were",
        "is",
        "are",
        "am",
        "has",
        "have",
        "had",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
    ]
)


class Rescoring(RecallPool):
    """Fusion, rescoring and reranking of a recall run's hits."""

    def _fuse(self) -> list[str]:
        fused = reciprocal_rank_fusion(
            {channel: [key for key, _ in ranked] for channel, ranked in self.rankings.items()},
            weights={channel: self.analysis.weights.get(channel, 1.0) for channel in self.rankings},
            k=FUSION_K,
        )
        self._fused_scores = {hit.id: hit.score for hit in fused}
        return [hit.id for hit in fused]

    def _tokens_of(self, key: str) -> frozenset[str]:
        tokens = self.found.tokens.get(key)
        if tokens is None:
            if key.startswith("entry:"):
                tokens = frozenset(self._window_tokens(self.found.entries[key]))
            else:
                tokens = frozenset(tokenize(item_text(self.found.items[key])))
            self.found.tokens[key] = tokens
        return tokens

    def _rescored(
        self, keys: Sequence[str], fused: Mapping[str, float] | None = None
    ) -> dict[str, float]:
        """The scores of ``keys`` rescored: their fused scores (``fused``, else those of
        the last ``_fuse``) scaled by coverage, recency, speaker and times retrieved."""
        fused = self._fused_scores if fused is None else fused
        content = [
            term
            for term in self.analysis.terms
            if term not in QUESTION_WORDS and term not in STOPWORDS
        ] or list(self.analysis.terms)
        span = max(self._last_seq - self._first_seq, 1)
        now = self.retriever.clock()
        scores = {}
        for key in keys:
            score = fused[key]
            if content:
                held = self._tokens_of(key)
                score *= 1 + COVERAGE_WEIGHT * sum(term in held for term in content) / len(content)
            if key.startswith("entry:"):
                entry = self.found.entries[key]
                recency = min(max((entry.seq - self._first_seq) / span, 0.0), 1.0)
                score *= 1 + RECENCY_WEIGHT * recency
                if self._by_speaker_named(entry):
                    score *= 1 + SPEAKER_WEIGHT
            else:
                item = self.found.items[key]
                age_days = max((now - item.recorded_at).total_seconds() / 86400, 0.0)
                score *= 1 + RECENCY_WEIGHT / (1 + age_days / 30)
                score *= 1 + RETRIEVED_WEIGHT * math.log1p(item.times_retrieved)
            scores[key] = score
        return scores

    @cached_property
    def input_words(self) -> frozenset[str]:
        """The input's words, lower case."""
        return frozenset(words(self.input))

    def _by_speaker_named(self, entry: Entry) -> bool:
        """Whether the input names the turn's speaker (as a word of its own)."""
        return entry.name is not None and entry.name.lower() in self.input_words

    def _speaker_first(self, keys: Sequence[str]) -> list[str]:
        """``keys`` with the turns of a speaker the input names first, then the turns of
        others, each part in its order; items stay with the first part. ``keys`` as they
        are when the input names none of their speakers.

        A question about someone ("What does Ana do to relax?") is answered by what they
        said: past the best hits, where the channels agree less, the turns of the one
        asked about find more of an answer spread over many sessions than the turns of
        others the fusion placed higher.
        """
        turns = {key: self.found.entries[key] for key in keys if key.startswith("entry:")}
        named = {key for key, entry in turns.items() if self._by_speaker_named(entry)}
        if not named:
            return list(keys)
        others = [key for key in keys if key in turns and key not in named]
        demoted = set(others)
        return [key for key in keys if key not in demoted] + others

    def _similarity(self, first: str, second: str) -> float:
        one, other = self._tokens_of(first), self._tokens_of(second)
        if not one or not other:
            return 0.0
        return len(one & other) / len(one | other)

    def _rerank_with_model(self, keys: list[str]) -> list[str]:
        reranker = self.retriever.reranker
        if reranker is None or not keys:
            return keys
        top = keys[:RERANK_DEPTH]
        texts = [
            turn_text(self.found.entries[key])
            if key.startswith("entry:")
            else item_text(self.found.items[key])
            for key in top
        ]
        try:
            scores = list(reranker.rerank(self.input, texts))
            if len(scores) != len(top):
                raise ValueError(f"the reranker gave {len(scores)} scores for {len(top)} texts")
            if not all(math.isfinite(float(score)) for score in scores):
                raise ValueError("the reranker gave a score that is not a finite number")
        except Exception as exc:  # any failure of the seam leaves the order
            logger.warning("Recall without the reranker: %s", exc)
            self.errors.append(RecallError("relevance", f"the reranker failed: {exc}"))
            return keys
        position = {key: n for n, key in enumerate(top)}
        by_score = dict(zip(top, (float(score) for score in scores), strict=True))
        reordered = sorted(top, key=lambda key: (-by_score[key], position[key]))
        self._reranked.update(by_score)
        return reordered + keys[RERANK_DEPTH:]
