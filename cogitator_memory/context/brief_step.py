"""The brief step of a hybrid build: what recall found for the turn (older turns, memory
items) as ``BriefSource``s, handed to the builder's briefer (``deps.briefer``) once; its
cards' block goes into the brief partition, after any brief the caller passed.

Only a build that recalls asks, and only when recall found something: a turn that memory
knows nothing about costs no model call. The sources are everything recall found, before
the budget is fitted (the brief is fitted first, as a required partition); items kept as
known facts are not recalled, so they are not sources. A briefer that fails (a model down, an answer
that cannot be read) leaves the brief out and is reported under ``brief``; a brief is a
hint and never stops a build.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from cogitator_memory.context.assembler import ContextBlock
from cogitator_memory.context.facts import fact_text
from cogitator_memory.context.seams import BriefSource
from cogitator_memory.context.turn_context import (
    EARLIER_IN_CONVERSATION,
    FROM_MEMORY,
    PART_SEPARATOR,
    TURN_GROUP,
    heading,
    line_tokens,
)
from cogitator_memory.threads.text import entry_text

if TYPE_CHECKING:
    from cogitator_memory.context.build_run import ContextBuild
    from cogitator_memory.items.models import MemoryItem
    from cogitator_memory.recall.types import RecallHit
    from cogitator_memory.threads.models import Entry

__all__ = [
    "BRIEF_SOURCE_ID",
    "brief_for_build",
    "item_source",
    "sources_of_hits",
    "sources_of_recall",
    "turn_source",
]

# The source id of the block of a build's brief cards (the caller's brief is "brief").
BRIEF_SOURCE_ID = "brief:cards"
TURN_DATE = "%Y-%m-%d %H:%M"
ITEM_DATE = "%Y-%m-%d"


def turn_source(entry: Entry, zone: ZoneInfo) -> BriefSource:
    """A recalled turn as a source: its text, dated when it was said."""
    return BriefSource(
        ref=f"turn:{entry.pk}",
        text=entry_text(entry),
        date=entry.created_at.astimezone(zone).strftime(TURN_DATE),
    )


def item_source(item: MemoryItem, zone: ZoneInfo) -> BriefSource:
    """A recalled memory item as a source: its sentence, dated from when it holds."""
    return BriefSource(
        ref=f"item:{item.pk}",
        text=fact_text(item),
        date=item.valid_from.astimezone(zone).strftime(ITEM_DATE),
    )


def _unique(sources: Iterable[BriefSource]) -> list[BriefSource]:
    seen: set[str] = set()
    kept = []
    for source in sources:
        if source.ref not in seen and source.text.strip():
            seen.add(source.ref)
            kept.append(source)
    return kept


def sources_of_hits(hits: Sequence[RecallHit], zone: ZoneInfo) -> list[BriefSource]:
    """The turns and items of a retrieval, best first, each once."""
    sources = []
    for hit in hits:
        if hit.kind == "entry" and hit.entry is not None:
            sources.append(turn_source(hit.entry, zone))
        elif hit.kind == "item" and hit.item is not None:
            sources.append(item_source(hit.item, zone))
    return _unique(sources)


def sources_of_recall(blocks: Sequence[ContextBlock], zone: ZoneInfo) -> list[BriefSource]:
    """The turns (with the turns sent next to them) and items of a build's recall blocks,
    best first, each once; search results and graph lines are not recall of the turn."""
    sources = []
    for block in blocks:
        section = heading(block)
        if section == EARLIER_IN_CONVERSATION:
            sources += [turn_source(entry, zone) for entry in block.payload[0].entries]
        elif section == FROM_MEMORY:
            sources.append(item_source(block.payload[0], zone))
    return _unique(sources)


def brief_for_build(run: ContextBuild, recall: Sequence[ContextBlock]) -> list[ContextBlock]:
    """The brief block of the cards the builder's briefer gives for what recall found (at
    most one model call); none without a briefer, an input or sources, or when the
    briefer fails (reported under ``brief``)."""
    briefer = run.builder.deps.briefer
    if briefer is None or not run.current_input:
        return []
    sources = sources_of_recall(recall, ZoneInfo(run.time_zone))
    if not sources:
        return []
    text = run.current_input
    none: list[Any] = []
    cards = run.attempt("brief", lambda: list(briefer.brief(text, sources)), none)
    if not cards:
        return []
    block = run.attempt("brief", lambda: briefer.block(cards), "")
    if not block:
        return []
    run.brief_cards = cards
    return [
        ContextBlock(
            "brief",
            block,
            line_tokens(block + PART_SEPARATOR),
            source_id=BRIEF_SOURCE_ID,
            groups=(TURN_GROUP,),
        )
    ]
