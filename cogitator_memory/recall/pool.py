"""What one recall run may find and how it reads a turn.

``RecallPool`` holds the state of one ``MemoryRetriever.retrieve``: the turns and items
that may come back (a history given, or a thread's entries checked against its branch,
the caller's grants and the entries already held), the rankings of the channels so far and
the errors. The channels (``recall/turn_channels.py``, ``recall/item_channels.py``) and
the rescoring (``recall/rescoring.py``) read and add to it; ``recall/run.py`` puts
them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cogitator_memory.items.models import MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.recall.channels import CHANNEL_DEPTH
from cogitator_memory.recall.keyword_scores import InMemoryBM25
from cogitator_memory.recall.named_entities import NamedEntity, entities_named
from cogitator_memory.recall.types import QueryAnalysis, RecallError
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry, Thread
from cogitator_memory.threads.paths import BranchEnd, branch_end, on_branch
from cogitator_memory.threads.text import entry_text

if TYPE_CHECKING:
    from cogitator_memory.grants import Grants, MemoryScope
    from cogitator_memory.recall.retriever import MemoryRetriever

__all__ = [
    "CONTEXT_GAP",
    "CONTEXT_SHARE",
    "Candidates",
    "RecallPool",
    "context_of",
    "entry_key",
    "item_key",
    "turn_text",
]

# A turn is read with the turns just before and after it on the branch, when they were
# said within CONTEXT_GAP of it: an answer ("the small Fuji one") is found by the words
# of the question it answers. Its keyword document holds their words too, and its vector
# score is its own cosine plus CONTEXT_SHARE of the best cosine of those turns.
CONTEXT_GAP = timedelta(hours=1)
CONTEXT_SHARE = 0.5


def entry_key(entry_id: str) -> str:
    return f"entry:{entry_id}"


def item_key(item_id: str) -> str:
    return f"item:{item_id}"


def turn_text(entry: Entry) -> str:
    """What a turn is found by: its text (``threads.text.entry_text``) after its
    speaker's name when it has one ("Ana: ...")."""
    text = entry_text(entry)
    return f"{entry.name}: {text}" if entry.name and text else text


def context_of(turns: Sequence[Entry]) -> dict[str, tuple[Entry, ...]]:
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
class Candidates:
    """The turns and items found so far, by key, with what rerank reads of them."""

    entries: dict[str, Entry] = field(default_factory=dict)
    items: dict[str, MemoryItem] = field(default_factory=dict)
    tokens: dict[str, frozenset[str]] = field(default_factory=dict)


class RecallPool:
    """One ``retrieve``: the candidates, the channels' rankings and the errors."""

    _thread_ok: bool | None

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
        grants: Grants | None,
    ) -> None:
        self.retriever = retriever
        self.analysis = analysis
        self.input = input
        self.anchor = anchor
        self.held = held
        self.thread_id = thread_id
        self.before_seq = before_seq
        self.leaf_id = leaf_id
        self._branch_end: BranchEnd | None = None
        self.grants = grants
        self.errors: list[RecallError] = []
        self.rankings: dict[str, list[tuple[str, float]]] = {}
        self.found = Candidates()
        # History mode: the turns searched, oldest first. Thread mode: None.
        self.turns: list[Entry] | None = None
        # History mode: the turns each turn is read with (its neighbours), by entry id.
        self.context: dict[str, tuple[Entry, ...]] = {}
        self.items: list[MemoryItem] = []
        self.named: list[NamedEntity] = []
        self._keyword_index: InMemoryBM25 | None = None
        self._first_seq = 0
        self._last_seq = 0
        self._thread_ok = None
        self._fused_scores: dict[str, float] = {}
        # The vector score of every turn found by vectors, thresholds aside (entry id ->
        # score).
        self.wide_cosines: dict[str, float] = {}
        self._reranked: dict[str, float] = {}

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
            if self.grants is not None and turns:
                visible = set(
                    Thread.objects.visible_to(self.grants)
                    .filter(pk__in={entry.thread_id for entry in turns})
                    .values_list("pk", flat=True)
                )
                turns = [entry for entry in turns if entry.thread_id in visible]
            turns = [entry for entry in turns if entry_text(entry)]
            self.turns = turns
            for entry in turns:
                self.found.entries[entry_key(entry.pk)] = entry
            self.context = context_of(turns)
            if turns:
                self._first_seq = min(entry.seq for entry in turns)
                self._last_seq = max(entry.seq for entry in turns)

    def _thread_visible(self) -> bool:
        if self._thread_ok is None:
            threads = Thread.objects.filter(pk=self.thread_id)
            if self.grants is not None:
                threads = threads.visible_to(self.grants)
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
        if self._branch_end is None:
            # Read once a run: every read of candidates checks against the same branch.
            self._branch_end = branch_end(self.thread_id, self.leaf_id)
        kept = on_branch(self.thread_id, self.leaf_id, seqs, end=self._branch_end)
        return {entry_id: entry for entry_id, entry in entries.items() if entry_id in kept}

    def load_items(self, items: Sequence[MemoryItem] | None, scope: MemoryScope | None) -> None:
        if items is None:
            if scope is None:
                return
            items = MemoryItems(clock=self.retriever.clock).query(
                scope, as_of=self.anchor, grants=self.grants
            )
        elif self.grants is not None:
            items = [item for item in items if self.grants.allows(item.agent_id, item.user_id)]
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

    def _window_tokens(self, entry: Entry) -> tuple[str, ...]:
        """The tokens of a turn and of the turns it is read with."""
        tokens = self.retriever._turn_tokens(entry)
        for other in self.context.get(entry.pk, ()):
            tokens = tokens + self.retriever._turn_tokens(other)
        return tokens

    def _turn_index(self) -> InMemoryBM25:
        if self._keyword_index is None:
            turns = self.turns or []
            self._keyword_index = InMemoryBM25(
                [(entry.pk, self._window_tokens(entry)) for entry in turns]
            )
        return self._keyword_index
