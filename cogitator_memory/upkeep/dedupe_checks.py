"""The checks every group of a dedupe answer passes before an item is marked stale.

A model proposes; code decides:

- a group that names an item the model was not shown is refused whole, and so is a
  group that keeps and drops the same item, or that is not of the shape asked for;
- an item is never dropped for a less trusted one (``TRUST_RANK``: system > user > model
  > tool > web);
- a contradiction drops only items said before the one kept. "Said" is ``recorded_at``,
  when memory learned the statement from the conversation; ``valid_from`` is when the
  statement holds in the world ("since 2019"), which says nothing of which statement came
  last;
- within one answer an item is dropped at most once, a kept item is never dropped by a
  later group, and a group that keeps an item an earlier group dropped is refused, so
  two groups can never drop each other's kept items and leave nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cogitator_memory.items.models import TRUST_RANK, MemoryItem

__all__ = ["CONTRADICTION", "DUPLICATE", "MAX_NOTE_CHARS", "Drop", "Reason", "checked_drops"]

DUPLICATE = "duplicate"
CONTRADICTION = "contradiction"
REASONS = (DUPLICATE, CONTRADICTION)
# The model's note is kept in ``stale_because``: a few words, not an essay.
MAX_NOTE_CHARS = 200

Reason = Literal["duplicate", "contradiction"]


@dataclass(frozen=True)
class Drop:
    """An item to mark stale, the item kept in its place, why, and the model's note."""

    item_id: str
    kept_id: str
    reason: Reason
    note: str = ""


def _note(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    words = " ".join(value.replace("\x00", " ").split())
    return words[:MAX_NOTE_CHARS]


def _ids(value: Any) -> list[str] | None:
    """The ids of a group's ``drop``: a list of texts (a lone text is read as one id);
    None when it is anything else."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(each, str) for each in value):
        return None
    return list(dict.fromkeys(each.strip() for each in value))


def _may_drop(dropped: MemoryItem, kept: MemoryItem, reason: str) -> bool:
    if TRUST_RANK[dropped.trust] > TRUST_RANK[kept.trust]:
        return False
    return reason != CONTRADICTION or dropped.recorded_at < kept.recorded_at


def checked_drops(groups: Sequence[Mapping[str, Any]], shown: Sequence[MemoryItem]) -> list[Drop]:
    """The drops of ``groups`` that pass every check, in the order of the answer."""
    by_id = {item.pk: item for item in shown}
    drops: dict[str, Drop] = {}
    kept_ids: set[str] = set()
    for group in groups:
        keep, reason, named = group.get("keep"), group.get("reason"), _ids(group.get("drop"))
        if not isinstance(keep, str) or reason not in REASONS or not named:
            continue
        keep = keep.strip()
        if keep not in by_id or any(item_id not in by_id for item_id in named):
            continue
        if keep in named or keep in drops:
            continue
        kept = by_id[keep]
        note = _note(group.get("note"))
        allowed = [
            item_id
            for item_id in named
            if item_id not in drops
            and item_id not in kept_ids
            and _may_drop(by_id[item_id], kept, reason)
        ]
        if not allowed:
            continue
        kept_ids.add(keep)
        for item_id in allowed:
            drops[item_id] = Drop(item_id, keep, reason, note)
    return list(drops.values())
