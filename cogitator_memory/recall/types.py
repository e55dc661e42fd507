"""What a recall search says: how it read the turn, and the turns and items it found.

``recall/query_analysis.py`` fills ``QueryAnalysis``; ``recall/retriever.py`` returns a
``Retrieval``; the context builder (``context/``), the recall API and the admin preview
read these and nothing else of the retriever.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from cogitator_memory.items.intervals import ResolvedTime

if TYPE_CHECKING:
    from cogitator_memory.items.models import MemoryItem
    from cogitator_memory.threads.models import Entry

QueryKind = Literal["temporal", "aggregate", "update", "preference", "general"]
QUERY_KINDS: tuple[QueryKind, ...] = ("temporal", "aggregate", "update", "preference", "general")
HitKind = Literal["entry", "item"]


@dataclass(frozen=True)
class QueryAnalysis:
    """A turn read without a model.

    ``search``: False for small talk ("thanks!", "hi"), which is not searched. ``kind``: the
    kind of question. ``time``: the time the turn names, resolved from the anchor in the
    turn's zone, or None. ``terms``: the turn's keyword terms (``keywords/tokenizer.py``).
    ``weights``: the weight of each recall channel for this kind of question.
    """

    search: bool
    kind: QueryKind
    time: ResolvedTime | None
    terms: tuple[str, ...]
    weights: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ChannelScore:
    """Where one channel ranked a hit (1 = its best) and the channel's own score."""

    rank: int
    score: float


@dataclass(frozen=True)
class RecallHit:
    """A turn (``entry``) or a memory item (``item``) recall found, with its final score
    and, per channel that found it, that channel's rank and score."""

    kind: HitKind
    id: str
    score: float
    channels: Mapping[str, ChannelScore]
    entry: Entry | None = None
    item: MemoryItem | None = None


@dataclass(frozen=True)
class RecallError:
    """A part of recall that failed and was left out (``source``: relevance, history,
    facts, semantic) and why, in words a developer reads."""

    source: str
    message: str


@dataclass(frozen=True)
class Retrieval:
    """The analysis of the turn and its hits, best first, turns and items in one list."""

    analysis: QueryAnalysis
    hits: list[RecallHit]
    errors: list[RecallError] = field(default_factory=list)
