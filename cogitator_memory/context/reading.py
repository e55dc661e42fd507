"""Reading the history a build needs, and no more.

A thread with a compaction is read as compacted history (``read_compacted_history``):
from the leaf back to the newest compaction's first kept entry, so its cost follows the
history since the compaction. A thread without one (one indexed query says so) is read
from the leaf back only until ``enough`` says the entries read are all a build could use
(the budget of a recent run), so a build of a long thread costs what its budget holds,
not what the thread holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cogitator_memory.compaction.history import COMPACTION, read_compacted_history
from cogitator_memory.conf import memory_settings
from cogitator_memory.grants import Grants
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry
from cogitator_memory.threads.paths import branch_chunks, doubling
from cogitator_memory.threads.selectors import entry_in_thread, visible_thread

__all__ = ["HistoryRead", "read_history"]

FIRST_STEP = 32


@dataclass(frozen=True)
class HistoryRead:
    """The history read, oldest first (a compaction entry first when there is one), and
    whether it reaches the start of the branch (or the compaction)."""

    entries: list[Entry]
    complete: bool


def read_history(
    thread_id: str,
    leaf_id: str | None = None,
    *,
    grants: Grants | None = None,
    enough: Callable[[Entry], bool] | None = None,
    first_step: int = FIRST_STEP,
) -> HistoryRead:
    """The compacted history of the branch ending at ``leaf_id`` (the active leaf by
    default). On a thread without compactions, ``enough`` (given each conversation entry
    from the newest back) stops the read once it returns True; ``first_step`` entries
    are read at first (what ``enough`` needs at least, when the caller knows it).

    Raises ``ThreadNotFound`` (also for a thread ``grants`` do not reach) and
    ``EntryNotInThread`` for a leaf of another thread.
    """
    if enough is None or Entry.objects.filter(type=COMPACTION, thread_id=thread_id).exists():
        return HistoryRead(read_compacted_history(thread_id, leaf_id, grants=grants), True)
    thread = visible_thread(thread_id, grants)
    start = (
        entry_in_thread(leaf_id, thread_id, field="leaf_id").pk
        if leaf_id is not None
        else thread.active_leaf_id
    )
    found: list[Entry] = []  # newest first
    steps = doubling(first_step, memory_settings.PATH_WALK_STEP)
    for chunk in branch_chunks(thread_id, start, thread.fork_seq, steps):
        for entry in chunk:
            found.append(entry)
            if entry.type in CONVERSATION_TYPES and enough(entry):
                found.reverse()
                return HistoryRead(found, entry.parent_id is None)
    found.reverse()
    return HistoryRead(found, True)
