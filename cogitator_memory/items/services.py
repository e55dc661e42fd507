"""``MemoryItems``: the rules of memory items, over the ``MemoryItem`` rows.

The rules live in one module each, joined here into the one class callers use:

- ``items.writing``: writing a statement (a new state of its slot, or a merge), and when
  an item is active on its own;
- ``items.transitions``: a reviewer's decisions and the other changes of status;
- ``items.selectors``: the reads (what holds at a moment, what recall searches, a slot's
  history);
- ``items.timeline``: the layout of a slot's states by time;
- ``items.write_sql``: the raw SQL of the hot write path and the agent's lock.
"""

from __future__ import annotations

from cogitator_memory.items.selectors import ItemReads
from cogitator_memory.items.transitions import ItemTransitions
from cogitator_memory.items.writing import ItemWriting

__all__ = ["MemoryItems"]


class MemoryItems(ItemWriting, ItemTransitions, ItemReads):
    """The rules of memory items. ``activation_confidence``: the confidence at which a
    user's item whose quotes are grounded (they hold, and one says its value) becomes
    active on its own (``ITEMS`` setting, 0.7 by default). ``clock`` gives "now" (tests
    pass their own)."""
