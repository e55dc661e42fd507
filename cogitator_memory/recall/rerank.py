"""Reordering the best hits of recall: the ``Reranker`` seam, a local cross-encoder, and
maximal marginal relevance (MMR) for diversity.

A ``Reranker`` scores texts against a query (higher is more relevant); recall reorders
its best ``RERANK_DEPTH`` hits by those scores, and a reranker that fails leaves the order
as it was (``recall/retriever.py`` reports a relevance error). ``CrossEncoderReranker`` is
one, a sentence-transformers cross-encoder run in process; it loads a model only from a
local directory (``RECALL["RERANKER_PATH"]`` or its ``path``), never from a hub.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.conf import memory_settings

__all__ = [
    "RERANK_DEPTH",
    "CrossEncoderReranker",
    "Reranker",
    "maximal_marginal_relevance",
    "reranker_from_settings",
]

# The hits a reranker reorders: a cross-encoder reads each with the query, about 10 ms a
# pair for a MiniLM-size model on CPU.
RERANK_DEPTH = 30


class Reranker(Protocol):
    """Scores of ``texts`` for ``query``, one per text, in order, higher is better."""

    def rerank(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


class CrossEncoderReranker:
    """A sentence-transformers cross-encoder read from a local directory.

    ``path``: the model's directory (the files a cross-encoder is saved as). The library is
    imported, and the model loaded, on the first ``rerank``; loading never reaches the
    network (``local_files_only``). Raises ``ImproperlyConfigured`` when sentence-transformers
    is not installed or ``path`` is not a directory.
    """

    def __init__(self, path: str | Path, *, device: str | None = None) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ImproperlyConfigured(
                "CrossEncoderReranker needs sentence-transformers: "
                "pip install 'cogitator-memory[local]'"
            )
        self.path = Path(path)
        if not self.path.is_dir():
            raise ImproperlyConfigured(
                f"The reranker's model directory {str(self.path)!r} does not exist; give "
                "the local directory of a cross-encoder in RECALL['RERANKER_PATH']."
            )
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(
                    str(self.path), device=self.device, local_files_only=True
                )
            return self._model

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        scores = self._load().predict([(query, text) for text in texts])
        return [float(score) for score in scores]


def reranker_from_settings() -> Reranker | None:
    """The cross-encoder of ``RECALL["RERANKER_PATH"]``, or None when no path is set.
    Raises ``ImproperlyConfigured`` as ``CrossEncoderReranker`` does."""
    path = memory_settings.RECALL.get("RERANKER_PATH")
    return CrossEncoderReranker(path) if path else None


def maximal_marginal_relevance(
    ids: Sequence[str],
    relevance: Sequence[float],
    similarity: Callable[[str, str], float],
    *,
    balance: float = 0.85,
    limit: int | None = None,
) -> list[str]:
    """``ids`` reordered for diversity: each next one maximizes ``balance`` x its relevance
    (scaled to the best) minus (1 - ``balance``) x its greatest ``similarity`` to those
    already chosen (Carbonell and Goldstein, SIGIR 1998). ``limit``: how many to choose
    (all by default); the rest follow in their order."""
    if not ids:
        return []
    top = max(relevance) or 1.0
    scaled = {item: score / top for item, score in zip(ids, relevance, strict=True)}
    remaining = list(ids)
    count = len(ids) if limit is None else min(limit, len(ids))
    chosen: list[str] = []
    nearest = dict.fromkeys(remaining, 0.0)
    while remaining and len(chosen) < count:
        best = max(
            remaining,
            key=lambda item: balance * scaled[item] - (1 - balance) * nearest[item],
        )
        chosen.append(best)
        remaining.remove(best)
        for item in remaining:
            nearest[item] = max(nearest[item], similarity(item, best))
    return chosen + remaining
