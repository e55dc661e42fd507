"""Cosines against a query vector, and the thresholds recall keeps vector hits by.

These functions hold no state and touch no database.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["VECTOR_FLOOR", "VECTOR_SHARE", "cosines", "kept_by_thresholds"]

# A vector hit is kept at a cosine of at least VECTOR_FLOOR and at least VECTOR_SHARE of the
# best cosine of the search (the specification's Recall section).
VECTOR_FLOOR = 0.45
VECTOR_SHARE = 0.6


def cosines(query: np.ndarray, vectors: Mapping[str, np.ndarray]) -> dict[str, float]:
    """The cosine of each vector with ``query`` (vectors of another size are left out)."""
    norm = float(np.linalg.norm(query)) or 1.0
    found: dict[str, float] = {}
    for key, vector in vectors.items():
        if vector.shape != query.shape:
            continue
        length = float(np.linalg.norm(vector)) or 1.0
        found[key] = float(vector @ query) / (length * norm)
    return found


def kept_by_thresholds(
    scores: Mapping[str, float],
    *,
    floor: float = VECTOR_FLOOR,
    share: float = VECTOR_SHARE,
    limit: int,
) -> list[tuple[str, float]]:
    """The vector hits recall keeps, best first: a cosine of ``floor`` or more and
    ``share`` of the best or more, at most ``limit``."""
    if not scores:
        return []
    best = max(scores.values())
    cut = max(floor, share * best)
    kept = [(key, score) for key, score in scores.items() if score >= cut]
    return sorted(kept, key=lambda pair: (-pair[1], pair[0]))[:limit]
