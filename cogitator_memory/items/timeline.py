"""The layout of a slot's timeline: its active, superseded and let-go states, each closed
where the next starts (or at the end it was given), the last open. ``lay_out`` decides
in memory; ``write_sql.layout_slot`` reads, lays out and saves. Suggested states are not
in the timeline, and neither is a suggestion let go without ever being active
(``in_timeline``): it never held, so it has no place to keep."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cogitator_memory.items.models import (
    ItemStatus,
    MemoryItem,
)

# The statuses of the states a slot's timeline is made of (see ``in_timeline``).
TIMELINE_STATUSES = (ItemStatus.ACTIVE, ItemStatus.SUPERSEDED, ItemStatus.LET_GO)
# What the layout changes in a state.
LAYOUT_SAVED = ("valid_to", "valid_to_known_at", "status")


@dataclass
class SlotState:
    """A state of a slot as a write and the layout read it: its place in the timeline,
    and what deciding on a merge or a contradiction looks at."""

    pk: str
    status: str
    valid_from: datetime
    valid_to: datetime | None
    valid_to_known_at: datetime | None
    ends_at: datetime | None
    recorded_at: datetime
    value: str
    kind: str
    trust: str
    confidence: float
    activated_at: datetime | None


def in_timeline(state: SlotState | MemoryItem) -> bool:
    """Whether a state has a place in its slot's timeline: an active or superseded one, or
    one let go after it was active (``activated_at``). A suggestion let go never held: it
    keeps no place, so the state before it is not cut short by it."""
    if state.status == ItemStatus.LET_GO:
        return state.activated_at is not None
    return state.status in TIMELINE_STATUSES


def lay_out(
    states: Sequence[SlotState | MemoryItem], known_at: datetime
) -> list[SlotState | MemoryItem]:
    """Lay out a slot's active, superseded and let-go states, given in order of validity:
    each closed where the next starts (or at the end it was given, if earlier) and the
    last open; every state but a let-go one superseded when another follows it, active
    when none does. A changed end is stamped ``known_at``, so a read of what memory knew
    earlier leaves it out. Changes the states in place, saves nothing, and returns those
    it changed."""
    changed: list[SlotState | MemoryItem] = []
    for index, state in enumerate(states):
        following = states[index + 1] if index + 1 < len(states) else None
        end = following.valid_from if following is not None else None
        if state.ends_at is not None and (end is None or state.ends_at < end):
            end = state.ends_at
        status = state.status
        if status != ItemStatus.LET_GO:
            status = ItemStatus.SUPERSEDED if following is not None else ItemStatus.ACTIVE
        if (state.valid_to, state.status) != (end, status):
            if state.valid_to != end:
                state.valid_to_known_at = known_at
            state.valid_to, state.status = end, status
            changed.append(state)
    return changed
