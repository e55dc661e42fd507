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
the turn's kind of question), then each hit's score is scaled up by the share of the
turn's words it holds, a little for recent turns and for items sent to a model more often
(``times_retrieved``), laid out for diversity (MMR), and the best ``RERANK_DEPTH`` are
reordered by a ``Reranker`` when one is given; a reranker that fails leaves the order and
adds a relevance error.

Which turns may come back: those of the branch being built, never one held in the context
already, never one of another thread. The caller gives either

- ``history``: the branch's older entries (``get_path`` or the compacted history), which
  are then the only turns searched; or
- ``thread_id`` (with ``before_seq``, and ``leaf_id`` for a branch other than the thread's
  active one): the thread's entries before ``before_seq`` are searched through the message
  index, the keyword index of entries and the database, and every turn found is checked to
  be ``leaf_id`` or one of its ancestors (``threads.paths.on_branch``: turns before the
  thread's first fork need no walk, the others one walk up from the leaf).

With ``access``, turns of a thread the caller may not see are never returned. Items are
only those ``MemoryItems.query(scope, as_of=anchor, access=access)`` returns (or the
``items`` given, narrowed to what ``access`` may see).
"""

from __future__ import annotations

import importlib
import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
from django.utils import timezone

from cogitator_memory.embeddings.message_index import (
    MESSAGE_SOURCE_TYPE,
    MESSAGES_INDEX,
    message_index_enabled,
)
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.services import EmbeddingService, get_embedding_service
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore
from cogitator_memory.exceptions import CogitatorMemoryError
from cogitator_memory.items.models import Evidence, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.vectors import item_text, item_vectors
from cogitator_memory.limits import check_limit
from cogitator_memory.search.fusion import reciprocal_rank_fusion
from cogitator_memory.search.query_analysis import analyze_query
from cogitator_memory.search.recall_channels import (
    KeywordIndex,
    NamedEntity,
    cosines,
    entities_named,
    kept_by_thresholds,
    mentions,
    personalized_pagerank,
)
from cogitator_memory.search.rerank import (
    RERANK_DEPTH,
    Reranker,
    maximal_marginal_relevance,
    reranker_from_settings,
)
from cogitator_memory.search.retrieval_types import (
    ChannelScore,
    QueryAnalysis,
    RecallError,
    RecallHit,
    Retrieval,
)
from cogitator_memory.search.tokenizer import STOPWORDS, tokenize, words
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry, Thread
from cogitator_memory.threads.paths import on_branch
from cogitator_memory.threads.text import entry_text

if TYPE_CHECKING:
    from cogitator_memory.items.scopes import MemoryScope
    from cogitator_memory.scope import Scope

__all__ = ["MemoryRetriever", "turn_text"]

logger = logging.getLogger(__name__)

# How deep each channel ranks: deep enough that a hit one channel ranks low and another
# high still reaches the fused top 50.
CHANNEL_DEPTH = 150
# Texts per embedding call when turns of the history are embedded.
EMBED_BATCH = 64
# Vectors of turns kept per retriever (by entry id), and query vectors.
MAX_CACHED_VECTORS = 50_000
MAX_CACHED_QUERIES = 256
# Reciprocal-rank fusion's k (Cormack et al.'s 60).
FUSION_K = 60
# A turn is read with the turns just before and after it on the branch, when they were
# said within CONTEXT_GAP of it: an answer ("the small Fuji one") is found by the words
# of the question it answers. Its keyword document holds their words too, and its vector
# score is its own cosine plus CONTEXT_SHARE of the best cosine of those turns.
CONTEXT_GAP = timedelta(hours=1)
CONTEXT_SHARE = 0.5
# The best items whose evidence turns (and graph neighbours) are followed, and the best
# turns whose neighbours are.
SEED_ITEMS = 5
SEED_TURNS = 10
# Rerank: a hit's fused score times (1 + COVERAGE_WEIGHT x the share of the turn's content
# words it holds) x (1 + RECENCY_WEIGHT x how recent it is, 0 to 1) x (1 + RETRIEVED_WEIGHT
# x log(1 + times_retrieved)).
COVERAGE_WEIGHT = 0.5
RECENCY_WEIGHT = 0.05
RETRIEVED_WEIGHT = 0.05
# A turn said by someone the input names ("What did Ana say about...") is scaled by
# 1 + SPEAKER_WEIGHT.
SPEAKER_WEIGHT = 0.3
# MMR: the share of relevance against novelty, over the best MMR_DEPTH hits.
MMR_BALANCE = 0.9
MMR_DEPTH = 100
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


ThreadSearch = Callable[..., list[tuple[str, float]]]


def _indexed_thread_search() -> ThreadSearch | None:
    """``search/entry_keywords.search_thread_entries`` (BM25 over a thread's entries from
    the keyword index), or None where this installation lacks it: recall then ranks the
    thread's entries itself."""
    try:
        module = importlib.import_module("cogitator_memory.search.entry_keywords")
    except ImportError:
        return None
    search: ThreadSearch | None = getattr(module, "search_thread_entries", None)
    return search


def entry_key(entry_id: str) -> str:
    return f"entry:{entry_id}"


def item_key(item_id: str) -> str:
    return f"item:{item_id}"


def turn_text(entry: Entry) -> str:
    """What a turn is found by: its text (``threads.text.entry_text``) after its
    speaker's name when it has one ("Ana: ...")."""
    text = entry_text(entry)
    return f"{entry.name}: {text}" if entry.name and text else text


def _context_of(turns: Sequence[Entry]) -> dict[str, tuple[Entry, ...]]:
    """The turns each turn is read with: those just before and after it in ``turns``,
    said within ``CONTEXT_GAP`` of it."""
    context: dict[str, tuple[Entry, ...]] = {}
    for n, entry in enumerate(turns):
        around = [
            turns[other]
            for other in (n - 1, n + 1)
            if 0 <= other < len(turns)
            and abs(turns[other].created_at - entry.created_at) <= CONTEXT_GAP
        ]
        context[entry.pk] = tuple(around)
    return context


@dataclass
class _Candidates:
    """The turns and items found so far, by key, with what rerank reads of them."""

    entries: dict[str, Entry] = field(default_factory=dict)
    items: dict[str, MemoryItem] = field(default_factory=dict)
    tokens: dict[str, frozenset[str]] = field(default_factory=dict)


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
        access: Scope | None = None,
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
        items searched, else those of ``scope``. ``access``: the caller's grants.

        Raises ``InvalidInput`` for an anchor without a zone, an unknown zone or a limit
        that is not a whole number of 1 or more. A part
        that fails (the embedding service, the store, the reranker) is left out and
        reported in ``errors``.
        """
        check_limit(limit)
        analysis = analyze_query(input, anchor, time_zone)
        if not analysis.search:
            return Retrieval(analysis=analysis, hits=[])
        run = _Run(
            self,
            analysis=analysis,
            input=input,
            anchor=anchor,
            held=frozenset(held),
            thread_id=thread_id,
            before_seq=before_seq,
            leaf_id=leaf_id,
            access=access,
        )
        run.load_turns(history)
        run.load_items(items, scope)
        return run.search(cosines=cosines, item_cosines=item_cosines, limit=limit)


class _Run:
    """One ``retrieve``: the candidates, the channels' rankings and the errors."""

    def __init__(
        self,
        retriever: MemoryRetriever,
        *,
        analysis: QueryAnalysis,
        input: str,
        anchor: datetime,
        held: frozenset[str],
        thread_id: str | None,
        before_seq: int | None,
        leaf_id: str | None,
        access: Scope | None,
    ) -> None:
        self.retriever = retriever
        self.analysis = analysis
        self.input = input
        self.anchor = anchor
        self.held = held
        self.thread_id = thread_id
        self.before_seq = before_seq
        self.leaf_id = leaf_id
        self.access = access
        self.errors: list[RecallError] = []
        self.rankings: dict[str, list[tuple[str, float]]] = {}
        self.found = _Candidates()
        # History mode: the turns searched, oldest first. Thread mode: None.
        self.turns: list[Entry] | None = None
        # History mode: the turns each turn is read with (its neighbours), by entry id.
        self.context: dict[str, tuple[Entry, ...]] = {}
        self.items: list[MemoryItem] = []
        self.named: list[NamedEntity] = []
        self._keyword_index: KeywordIndex | None = None
        self._first_seq = 0
        self._last_seq = 0
        self._thread_ok: bool | None = None

    # --- what may be found ---------------------------------------------------------------

    def _admissible(self, entry: Entry) -> bool:
        return (
            entry.type in CONVERSATION_TYPES
            and not entry.is_redacted
            and entry.pk not in self.held
            and (self.before_seq is None or entry.seq < self.before_seq)
            and (self.thread_id is None or entry.thread_id == self.thread_id)
        )

    def load_turns(self, history: Sequence[Entry]) -> None:
        if history or self.thread_id is None:
            turns = [entry for entry in history if self._admissible(entry)]
            if self.access is not None and turns:
                visible = set(
                    Thread.objects.visible_to(self.access)
                    .filter(pk__in={entry.thread_id for entry in turns})
                    .values_list("pk", flat=True)
                )
                turns = [entry for entry in turns if entry.thread_id in visible]
            turns = [entry for entry in turns if entry_text(entry)]
            self.turns = turns
            for entry in turns:
                self.found.entries[entry_key(entry.pk)] = entry
            self.context = _context_of(turns)
            if turns:
                self._first_seq = min(entry.seq for entry in turns)
                self._last_seq = max(entry.seq for entry in turns)

    def _thread_visible(self) -> bool:
        if self._thread_ok is None:
            threads = Thread.objects.filter(pk=self.thread_id)
            if self.access is not None:
                threads = threads.visible_to(self.access)
            self._thread_ok = threads.exists()
        return self._thread_ok

    def _thread_entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        """Thread mode: the entries of these ids that may be returned (of the thread,
        before ``before_seq``, on the branch), by id."""
        if self.turns is not None:
            pool = {entry.pk: entry for entry in self.turns}
            return {entry_id: pool[entry_id] for entry_id in ids if entry_id in pool}
        if not ids or not self._thread_visible():
            return {}
        known = {
            entry_id: self.found.entries[entry_key(entry_id)]
            for entry_id in ids
            if entry_key(entry_id) in self.found.entries
        }
        wanted = [entry_id for entry_id in ids if entry_id not in known]
        rows = Entry.objects.filter(pk__in=wanted, thread_id=self.thread_id)
        fresh = {entry.pk: entry for entry in rows if self._admissible(entry) and entry_text(entry)}
        fresh = self._on_branch(fresh)
        for entry in fresh.values():
            self.found.entries[entry_key(entry.pk)] = entry
            self._last_seq = max(self._last_seq, entry.seq)
        return {**known, **fresh}

    def _on_branch(self, entries: dict[str, Entry]) -> dict[str, Entry]:
        """The entries that are the leaf (the thread's active leaf by default) or its
        ancestors (``threads.paths.on_branch``: no walk below the thread's first fork)."""
        if not entries or self.thread_id is None:
            return {}
        seqs = {entry_id: entry.seq for entry_id, entry in entries.items()}
        kept = on_branch(self.thread_id, self.leaf_id, seqs)
        return {entry_id: entry for entry_id, entry in entries.items() if entry_id in kept}

    def load_items(self, items: Sequence[MemoryItem] | None, scope: MemoryScope | None) -> None:
        if items is None:
            if scope is None:
                return
            items = MemoryItems(clock=self.retriever.clock).query(
                scope, as_of=self.anchor, access=self.access
            )
        elif self.access is not None:
            items = [item for item in items if self.access.allows(item.agent_id, item.user_id)]
        self.items = [item for item in items if item.pk not in self.held]
        for item in self.items:
            self.found.items[item_key(item.pk)] = item
        subjects = {item.subject_id: item.subject for item in self.items}
        self.named = entities_named(
            self.input,
            [(entity.pk, entity.name, entity.aliases or []) for entity in subjects.values()],
        )

    # --- channels -----------------------------------------------------------------------

    def _rank(self, channel: str, ranked: Sequence[tuple[str, float]]) -> None:
        if ranked:
            self.rankings[channel] = list(ranked[:CHANNEL_DEPTH])

    def _turn_index(self) -> KeywordIndex:
        if self._keyword_index is None:
            turns = self.turns or []
            self._keyword_index = KeywordIndex(
                [(entry.pk, self._window_tokens(entry)) for entry in turns]
            )
        return self._keyword_index

    def entry_keyword(self) -> None:
        terms = list(self.analysis.terms)
        if not terms:
            return
        if self.turns is not None:
            ranked = self._turn_index().ranked(terms, limit=CHANNEL_DEPTH)
        else:
            ranked = self._thread_keyword(self.input, limit=CHANNEL_DEPTH)
        self._rank("entry_keyword", [(entry_key(entry_id), score) for entry_id, score in ranked])

    def _thread_keyword(self, query: str, *, limit: int) -> list[tuple[str, float]]:
        """Thread mode: BM25 over the thread's entries through the keyword index of
        entries, or, where that is missing, over the thread's entries read here."""
        assert self.thread_id is not None
        indexed = _indexed_thread_search()
        if indexed is not None:
            found = indexed(
                self.thread_id,
                query,
                limit=limit,
                before_seq=self.before_seq,
                exclude_ids=tuple(self.held),
            )
        else:
            rows = Entry.objects.filter(
                thread_id=self.thread_id, type__in=sorted(CONVERSATION_TYPES)
            )
            if self.before_seq is not None:
                rows = rows.filter(seq__lt=self.before_seq)
            entries = [entry for entry in rows if self._admissible(entry)]
            index = KeywordIndex([(e.pk, self.retriever._turn_tokens(e)) for e in entries])
            found = index.ranked(list(self.analysis.terms) or tokenize(query), limit=limit)
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
        kept = kept_by_thresholds(self._in_context(scores), limit=CHANNEL_DEPTH)
        self._rank("entry_vector", [(entry_key(entry_id), score) for entry_id, score in kept])

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
        keyword = self.rankings.get("entry_keyword", [])
        scores = dict(keyword)
        ranked = sorted(
            inside,
            key=lambda entry: (-scores.get(entry_key(entry.pk), 0.0), -entry.seq),
        )
        self._rank(
            "entry_time",
            [(entry_key(entry.pk), scores.get(entry_key(entry.pk), 0.0)) for entry in ranked],
        )

    def entry_entity(self) -> None:
        if not self.named:
            return
        if self.turns is not None:
            counted = [(entry, mentions(entry_text(entry), self.named)) for entry in self.turns]
            scores = dict(self.rankings.get("entry_keyword", []))
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
        self._rank("entry_entity", found)

    def item_keyword(self) -> None:
        if not self.items or not self.analysis.terms:
            return
        index = KeywordIndex([(item.pk, tokenize(item_text(item))) for item in self.items])
        ranked = index.ranked(list(self.analysis.terms), limit=CHANNEL_DEPTH)
        self._rank("item_keyword", [(item_key(item_id), score) for item_id, score in ranked])

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
        self._rank("item_vector", [(item_key(item_id), score) for item_id, score in kept])

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
        self._rank("item_entity", [(item_key(item.pk), float(count)) for item, count in found])

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

        self._rank("item_time", [(item_key(item.pk), 1.0) for item in sorted(inside, key=order)])

    def item_graph(self, fused: Sequence[str]) -> None:
        """Personalized PageRank over items and entities (an item links its subject and
        the entities its value names), seeded with the entities named and the best items."""
        if not self.items:
            return
        seeds: dict[str, float] = {f"entity:{entity.id}": 1.0 for entity in self.named}
        best_items = [key for key in fused if key.startswith("item:")][:SEED_ITEMS]
        for rank, key in enumerate(best_items, start=1):
            seeds[key] = 1.0 / rank
        if not seeds:
            return
        entities = {item.subject_id: item.subject for item in self.items}
        known = [(entity.pk, entity.name, entity.aliases or []) for entity in entities.values()]
        edges = []
        for item in self.items:
            edges.append((item_key(item.pk), f"entity:{item.subject_id}"))
            for entity in entities_named(f"{item.value} {item.content}", known):
                if entity.id != item.subject_id:
                    edges.append((item_key(item.pk), f"entity:{entity.id}"))
        ranks = personalized_pagerank(edges, seeds)
        ranked = sorted(
            ((key, score) for key, score in ranks.items() if key.startswith("item:")),
            key=lambda pair: (-pair[1], pair[0]),
        )
        self._rank("item_graph", ranked)

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
            "entry_evidence",
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
        self._rank("entry_neighbor", [(key, 1.0) for key in found])

    # --- fusion and rerank -----------------------------------------------------------------

    def _fuse(self) -> list[str]:
        fused = reciprocal_rank_fusion(
            {channel: [key for key, _ in ranked] for channel, ranked in self.rankings.items()},
            weights={channel: self.analysis.weights.get(channel, 1.0) for channel in self.rankings},
            k=FUSION_K,
        )
        self._fused_scores = {hit.id: hit.score for hit in fused}
        return [hit.id for hit in fused]

    def _window_tokens(self, entry: Entry) -> tuple[str, ...]:
        """The tokens of a turn and of the turns it is read with."""
        tokens = self.retriever._turn_tokens(entry)
        for other in self.context.get(entry.pk, ()):
            tokens = tokens + self.retriever._turn_tokens(other)
        return tokens

    def _tokens_of(self, key: str) -> frozenset[str]:
        tokens = self.found.tokens.get(key)
        if tokens is None:
            if key.startswith("entry:"):
                tokens = frozenset(self._window_tokens(self.found.entries[key]))
            else:
                tokens = frozenset(tokenize(item_text(self.found.items[key])))
            self.found.tokens[key] = tokens
        return tokens

    def _rescored(self, keys: Sequence[str]) -> dict[str, float]:
        content = [
            term
            for term in self.analysis.terms
            if term not in QUESTION_WORDS and term not in STOPWORDS
        ] or list(self.analysis.terms)
        span = max(self._last_seq - self._first_seq, 1)
        now = self.retriever.clock()
        speakers = set(words(self.input))
        scores = {}
        for key in keys:
            score = self._fused_scores[key]
            if content:
                held = self._tokens_of(key)
                score *= 1 + COVERAGE_WEIGHT * sum(term in held for term in content) / len(content)
            if key.startswith("entry:"):
                entry = self.found.entries[key]
                recency = min(max((entry.seq - self._first_seq) / span, 0.0), 1.0)
                score *= 1 + RECENCY_WEIGHT * recency
                if entry.name and entry.name.lower() in speakers:
                    score *= 1 + SPEAKER_WEIGHT
            else:
                item = self.found.items[key]
                age_days = max((now - item.recorded_at).total_seconds() / 86400, 0.0)
                score *= 1 + RECENCY_WEIGHT / (1 + age_days / 30)
                score *= 1 + RETRIEVED_WEIGHT * math.log1p(item.times_retrieved)
            scores[key] = score
        return scores

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

    def search(
        self,
        *,
        cosines: Mapping[str, float] | None,
        item_cosines: Mapping[str, float] | None,
        limit: int,
    ) -> Retrieval:
        self._reranked: dict[str, float] = {}
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
            )
            + ordered[MMR_DEPTH:]
        )
        final = self._rerank_with_model(diverse)[:limit]
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
            channels["reranker"] = ChannelScore(
                rank=sorted(self._reranked.values(), reverse=True).index(self._reranked[key]) + 1,
                score=self._reranked[key],
            )
        if key.startswith("entry:"):
            entry = self.found.entries[key]
            return RecallHit(kind="entry", id=entry.pk, score=score, channels=channels, entry=entry)
        item = self.found.items[key]
        return RecallHit(kind="item", id=item.pk, score=score, channels=channels, item=item)
