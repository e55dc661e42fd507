"""Reciprocal rank fusion: one ranking out of several, by rank alone.

Each channel's ranking gives an item ``weight / (k + rank)`` (rank 1 is the best); an
item's score is the sum over the channels that ranked it (Cormack, Clarke and Buettcher,
SIGIR 2009, with k = 60 as there). Scores of different kinds (cosines, BM25) never meet,
so no channel needs calibrating against another.

Ties are broken the same way every time: the better best rank of the item in any channel
first, then the smaller id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cogitator_memory.exceptions import InvalidInput

DEFAULT_K = 60


@dataclass(frozen=True)
class Fused:
    """An item of the fused ranking: its id, score, and rank in each channel that had it."""

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def check_weights(weights: Mapping[str, float]) -> None:
    """``InvalidInput`` unless every weight is a finite number of 0 or more."""
    for channel, weight in weights.items():
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not math.isfinite(weight)
            or weight < 0
        ):
            raise InvalidInput(
                {"weights": f"The weight of {channel!r} must be a finite number of 0 or more."}
            )


def check_k(k: float) -> None:
    """``InvalidInput`` unless ``k`` is a finite number of 0 or more."""
    if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k < 0:
        raise InvalidInput({"k": "k must be a finite number of 0 or more."})


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    *,
    weights: Mapping[str, float] | None = None,
    k: float = DEFAULT_K,
) -> list[Fused]:
    """Fuse rankings of ids (channel name -> ids, best first) into one, best first.

    ``weights``: per channel, 1 where not given; a channel of weight 0 adds nothing but
    its items still appear when another channel ranks them. An id repeated in one channel
    counts at its first (best) place. Raises ``InvalidInput`` for a negative or
    non-finite weight or a negative ``k``.
    """
    weights = dict(weights or {})
    check_weights(weights)
    check_k(k)
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    # Channels in name order, so that the float sums are added in one order every time.
    for channel in sorted(rankings):
        weight = float(weights.get(channel, 1.0))
        for rank, item in enumerate(rankings[channel], start=1):
            item_ranks = ranks.setdefault(item, {})
            if channel in item_ranks:
                continue
            item_ranks[channel] = rank
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    ordered = sorted(scores, key=lambda item: (-scores[item], min(ranks[item].values()), item))
    return [Fused(item, scores[item], ranks[item]) for item in ordered]
