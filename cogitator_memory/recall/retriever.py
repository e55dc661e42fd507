"""Recall: the older turns of a branch and the memory items a run sees, searched for a turn.

``MemoryRetriever.retrieve`` reads the turn (``analyze_query``: small talk is not
searched), then runs its channels, each a ranking of turns or items:

- turns by their vectors (a cosine of ``VECTOR_FLOOR`` or more and ``VECTOR_SHARE`` of the
  best), by BM25 over the branch, by the time the turn names (turns said in that
  interval, in the turn's zone), by the entities of memory it names (turns holding their
  names), through the evidence of the best items, and next to the best turns;
- items by BM25 over their text, by their own vectors (``items/vectors.py``), by the
  entities named, by the time they held (validity overlapping the interval named), and
  by a personalized PageRank over the graph of items and entities, seeded with the
  entities named and the best items.

The rankings are fused by weighted reciprocal rank (``search/fusion.py``, the weights of
the turn's kind of question in ``recall/channels.py``), then each hit's score is scaled up
by the share of the turn's words it holds, a little for recent turns and for items sent to
a model more often (``times_retrieved``), the best laid out for diversity (MMR), and the
best ``RERANK_DEPTH`` are reordered by a ``Reranker`` when one is given; a reranker that
fails leaves the order and adds a relevance error. The first ``CONTEXT_RANKS`` hits (the
context builder's) are the same whatever the limit; past them, for a search that reads
deeper, the turns of a speaker the input names come before the turns of others.

Which turns may come back: those of the branch being built, never one held in the context
already, never one of another thread. The caller gives either

- ``history``: the branch's older entries (``get_path`` or the compacted history), which
  are then the only turns searched; or
- ``thread_id`` (with ``before_seq``, and ``leaf_id`` for a branch other than the thread's
  active one): the thread's entries before ``before_seq`` are searched through the message
  index, the keyword index of entries and the database, and every turn found is checked to
  be ``leaf_id`` or one of its ancestors (``threads.paths.on_branch``: turns before the
  thread's first fork need no walk, the others one walk up from the leaf).

With ``grants``, turns of a thread the caller may not see are never returned. Items are
only those ``MemoryItems.query(scope, as_of=anchor, grants=grants)`` returns (or the
``items`` given, narrowed to what ``grants`` reach).

Where the parts live, all in ``recall/``: ``channels.py`` (the channels and their weights),
``query_analysis.py`` (how a turn is read), ``pool.py`` (what one run may find),
``turn_channels.py`` and ``item_channels.py`` (the channels), built of
``keyword_scores.py``, ``vector_scores.py``, ``named_entities.py`` and ``graph_walk.py``;
``rescoring.py`` (fusion, rescoring, the reranker seam), ``rerank.py`` (rerankers and MMR)
and ``run.py`` (one run, start to end); this module keeps the seams and the caches of
vectors and tokens. Recall searches with ``search/`` (BM25's arithmetic, the keyword index
of entries, fusion) and is never imported by it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
from django.utils import timezone

from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.services import EmbeddingService, get_embedding_service
from cogitator_memory.embeddings.types import EmbeddingStore
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.keywords.tokenizer import tokenize
from cogitator_memory.limits import check_limit
from cogitator_memory.recall.pool import turn_text
from cogitator_memory.recall.query_analysis import analyze_query
from cogitator_memory.recall.rerank import Reranker, reranker_from_settings
from cogitator_memory.recall.run import RecallRun
from cogitator_memory.recall.types import Retrieval
from cogitator_memory.threads.models import Entry

if TYPE_CHECKING:
    from cogitator_memory.grants import Grants, MemoryScope

__all__ = ["MemoryRetriever", "turn_text"]

# Texts per embedding call when turns of the history are embedded.
EMBED_BATCH = 64
# Vectors of turns kept per retriever (by entry id), and query vectors.
MAX_CACHED_VECTORS = 50_000
MAX_CACHED_QUERIES = 256


class MemoryRetriever:
    """The multi-channel search of recall (this module's docstring says what it does).

    ``embedding_service``: the configured one by default (none: no vector channels);
    ``store``: the configured embedding store; ``reranker``: reorders the best hits (the
    cross-encoder of ``RECALL["RERANKER_PATH"]`` by default, none without it);
    ``clock``: "now" for the recency of items. One retriever keeps the vectors and
    tokens of the turns it embedded or read, by entry id, and the vectors of recent
    inputs: keep one per builder or per thread, not per turn.
    """

    def __init__(
        self,
        embedding_service: EmbeddingService | None = None,
        store: EmbeddingStore | None = None,
        reranker: Reranker | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._service = embedding_service
        self._store = store
        self.reranker = reranker if reranker is not None else reranker_from_settings()
        self.clock = clock or timezone.now
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._tokens: dict[str, tuple[str, ...]] = {}
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()

    # --- seams ---------------------------------------------------------------------------

    @property
    def service(self) -> EmbeddingService | None:
        return self._service if self._service is not None else get_embedding_service()

    @property
    def store(self) -> EmbeddingStore:
        return self._store if self._store is not None else get_embedding_store()

    def _query_vector(self, text: str, service: EmbeddingService) -> np.ndarray:
        vector = self._queries.get(text)
        if vector is None:
            vector = np.asarray(service.embed([text])[0], dtype=np.float32)
            self._queries[text] = vector
            if len(self._queries) > MAX_CACHED_QUERIES:
                self._queries.popitem(last=False)
        return vector

    def _turn_tokens(self, entry: Entry) -> tuple[str, ...]:
        tokens = self._tokens.get(entry.pk)
        if tokens is None:
            tokens = self._tokens[entry.pk] = tuple(tokenize(turn_text(entry)))
        return tokens

    def _turn_vectors(
        self, entries: Sequence[Entry], service: EmbeddingService
    ) -> dict[str, np.ndarray]:
        missing = [entry for entry in entries if entry.pk not in self._vectors]
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            vectors = service.embed([turn_text(entry) for entry in batch])
            for entry, vector in zip(batch, vectors, strict=True):
                self._vectors[entry.pk] = np.asarray(vector, dtype=np.float32)
        while len(self._vectors) > MAX_CACHED_VECTORS:
            self._vectors.popitem(last=False)
        return {entry.pk: self._vectors[entry.pk] for entry in entries if entry.pk in self._vectors}

    # --- the search ------------------------------------------------------------------------

    def retrieve(
        self,
        *,
        input: str,
        anchor: datetime,
        time_zone: str = "UTC",
        history: Sequence[Entry] = (),
        thread_id: str | None = None,
        before_seq: int | None = None,
        held: Collection[str] = (),
        cosines: Mapping[str, float] | None = None,
        items: Sequence[MemoryItem] | None = None,
        scope: MemoryScope | None = None,
        item_cosines: Mapping[str, float] | None = None,
        grants: Grants | None = None,
        limit: int = 20,
        leaf_id: str | None = None,
    ) -> Retrieval:
        """Turns and items for ``input``, best first, at most ``limit``, each with the
        channels that found it (rank and score).

        ``anchor``: when the turn is read (the time it names is resolved from it, items
        are read as of it); ``time_zone``: the turn's IANA zone. ``history`` or
        ``thread_id`` (with ``before_seq`` and ``leaf_id``): the turns that may be found
        (this module's docstring). ``held``: ids of entries and items already in the
        context, never returned. ``cosines`` / ``item_cosines``: vector scores the caller
        computed (entry or item id -> cosine), used instead of embedding. ``items``: the
        items searched, else those of ``scope``. ``grants``: the caller's grants.

        Raises ``InvalidInput`` for an anchor without a zone, an unknown zone or a limit
        that is not a whole number of 1 or more. A part
        that fails (the embedding service, the store, the reranker) is left out and
        reported in ``errors``.
        """
        check_limit(limit)
        analysis = analyze_query(input, anchor, time_zone)
        if not analysis.search:
            return Retrieval(analysis=analysis, hits=[])
        run = RecallRun(
            self,
            analysis=analysis,
            input=input,
            anchor=anchor,
            held=frozenset(held),
            thread_id=thread_id,
            before_seq=before_seq,
            leaf_id=leaf_id,
            grants=grants,
        )
        run.load_turns(history)
        run.load_items(items, scope)
        return run.search(cosines=cosines, item_cosines=item_cosines, limit=limit)
