"""Recalled turns and memory items as blocks of the recall partition, best first: what
the retriever found for the turn (``context/recall_step.py`` asks it), laid out.

- "Earlier in this conversation:": each turn dated in the turn's zone, with the turn next
  to it that makes it readable (the reply to a user's message, the message a reply
  answers), unless that one is in the context already.
- "From memory:": each item, with the interval it held when it no longer holds.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from cogitator_memory.context.assembler import ContextBlock
from cogitator_memory.context.facts import fact_text
from cogitator_memory.context.history import is_turn_start
from cogitator_memory.context.turn_context import (
    EARLIER_IN_CONVERSATION,
    FROM_MEMORY,
    line_tokens,
    turn_groups,
)
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.recall.types import RecallHit
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry
from cogitator_memory.threads.text import entry_text
from cogitator_memory.tokens import truncate_to_tokens

__all__ = [
    "RECALL_LIMIT",
    "TURN_TEXT_TOKENS",
    "RecalledTurn",
    "item_block",
    "neighbours",
    "recall_blocks",
    "turn_block",
]

# Hits asked of the retriever a turn; those that fit go in.
RECALL_LIMIT = 20
# A recalled turn longer than this is cut: recall points back, the history carries detail.
TURN_TEXT_TOKENS = 300
DATE_FORMAT = "%a %Y-%m-%d %H:%M"
DAY_FORMAT = "%Y-%m-%d"


@dataclass(frozen=True)
class RecalledTurn:
    """A turn recall found, and the turn sent next to it (or None)."""

    entry: Entry
    neighbour: Entry | None

    @property
    def entries(self) -> list[Entry]:
        pair = [self.entry] if self.neighbour is None else [self.entry, self.neighbour]
        return sorted(pair, key=lambda entry: entry.seq)


def neighbours(
    entries: Sequence[Entry], *, path: Collection[str], skip: Collection[str]
) -> dict[str, Entry]:
    """For each entry (by id), the turn that makes it readable: the first reply to a
    user's message (on the branch ``path`` when one is), the message a reply follows.
    Turns in ``skip`` (already in the context) are not given."""
    replies = [entry.pk for entry in entries if is_turn_start(entry)]
    parents = [entry.parent_id for entry in entries if not is_turn_start(entry) and entry.parent_id]
    children: dict[str, Entry] = {}
    for child in Entry.objects.filter(parent_id__in=replies, type__in=CONVERSATION_TYPES).order_by(
        "seq"
    ):
        assert child.parent_id is not None
        current = children.get(child.parent_id)
        if current is None or (child.pk in path and current.pk not in path):
            children[child.parent_id] = child
    found = Entry.objects.in_bulk([pk for pk in parents if pk is not None])
    result: dict[str, Entry] = {}
    for entry in entries:
        if is_turn_start(entry):
            neighbour = children.get(entry.pk)
        else:
            neighbour = found.get(entry.parent_id) if entry.parent_id else None
            if neighbour is not None and neighbour.type not in CONVERSATION_TYPES:
                neighbour = None
        if neighbour is not None and neighbour.pk not in skip:
            result[entry.pk] = neighbour
    return result


def _turn_line(entry: Entry, zone: ZoneInfo) -> str:
    text = " ".join(entry_text(entry).split())
    cut = truncate_to_tokens(text, TURN_TEXT_TOKENS)
    if cut != text:
        cut = cut.rstrip() + " …"
    when = entry.created_at.astimezone(zone).strftime(DATE_FORMAT)
    return f"[{when}] {entry.role or 'tool'}: {cut}"


def turn_block(turn: RecalledTurn, zone: ZoneInfo, hit: RecallHit | None = None) -> ContextBlock:
    lines = [_turn_line(entry, zone) for entry in turn.entries]
    rendered = "- " + "\n  ".join(lines)
    return ContextBlock(
        "recall",
        " ".join(entry_text(turn.entry).split()),
        line_tokens(rendered),
        source_id=turn.entry.pk,
        rendered=rendered,
        groups=turn_groups(EARLIER_IN_CONVERSATION),
        payload=(turn, hit),
    )


def item_block(
    item: MemoryItem, zone: ZoneInfo, as_of: datetime, hit: RecallHit | None = None
) -> ContextBlock:
    text = fact_text(item)
    line = f"- {text}"
    if item.valid_to is not None and item.valid_to <= as_of:
        start = item.valid_from.astimezone(zone).strftime(DAY_FORMAT)
        end = item.valid_to.astimezone(zone).strftime(DAY_FORMAT)
        line += f" (from {start} to {end})"
    return ContextBlock(
        "recall",
        text,
        line_tokens(line),
        source_id=item.pk,
        rendered=line,
        groups=turn_groups(FROM_MEMORY),
        payload=(item, hit),
    )


def recall_blocks(
    hits: Sequence[RecallHit],
    *,
    zone: ZoneInfo,
    as_of: datetime,
    path: Collection[str],
    in_context: Collection[str],
    held_items: Collection[str],
) -> list[ContextBlock]:
    """The hits as blocks, best first: turns not in the context (``in_context``: entry
    ids), items the facts did not keep (``held_items``)."""
    turns = [hit.entry for hit in hits if hit.kind == "entry" and hit.entry is not None]
    turns = [entry for entry in turns if entry.pk not in in_context]
    # A neighbour that recall found too is shown once, next to the better of the two.
    pairs = neighbours(turns, path=path, skip=in_context) if turns else {}
    blocks: list[ContextBlock] = []
    shown: set[str] = set()
    for hit in hits:
        if hit.kind == "entry" and hit.entry is not None:
            entry = hit.entry
            if entry.pk in in_context or entry.pk in shown:
                continue
            neighbour = pairs.get(entry.pk)
            if neighbour is not None and neighbour.pk in shown:
                neighbour = None
            shown.add(entry.pk)
            if neighbour is not None:
                shown.add(neighbour.pk)
            blocks.append(turn_block(RecalledTurn(entry, neighbour), zone, hit))
        elif hit.kind == "item" and hit.item is not None:
            if hit.item.pk in held_items:
                continue
            blocks.append(item_block(hit.item, zone, as_of, hit))
    return blocks
