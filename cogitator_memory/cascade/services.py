"""``MemoryCascade``: forgetting, redacting and rewinding, with what stands on the entries.

What memory derives from a conversation keeps the entries it stands on (the evidence of
items, a compaction's first kept entry and atoms, a memory file version's place, a fork's
copies). The cascade follows that lineage when entries go, so nothing derived from a turn
outlives the turn:

- ``delete_entries`` / ``redact_entries``: the entries, the replies of the user messages
  among them (``cascade.replies``), their copies in forks and forks of forks
  (``cascade.forks``), and the compaction summaries that cover or quote any of them
  (``compaction.coverage``). Events are deleted, never redacted. What the stores derived
  from them goes through the dependents (``dependents.forget_entries``).
- ``delete_thread``: the thread whole, the copies of its entries in its forks, and the
  memory of its own scope (``cascade.scopes``).
- ``delete_user``: every thread of the user, the user's messages in threads of others that
  list the user (``metadata.memoryUserIds``) with their replies, the user's scope in every
  agent, the user's vectors and channel sessions, and their traces (``cascade.traces``).
- ``rewind``: nothing is deleted; the items that stood only on the entries left behind
  become stale, before the thread moves.

Order and transactions: each batch (one thread with the copies in its forks; one agent of a
forgotten user's scope) is one transaction, which takes what stands on the entries out
first and then the entries, so a cascade killed or failed part of the way leaves every
batch done or not begun, and run again (``missing_ok=True`` for ids that went) finishes the
rest. Once the entries went, the cascade looks again for what stands on them (a vector
written by a task meanwhile), in a transaction of its own.

The parts live in modules of their own, joined here: ``cascade.entries`` (deleting and
redacting entries), ``cascade.threads``, ``cascade.users``, ``cascade.rewind``; what a
cascade plans for a thread in ``cascade.plans``.

Grants: a caller reaches only what its grants reach: an entry or thread they do not reach
answers as a missing one (``EntryNotFound``, ``ThreadNotFound``), and forgetting a user of
an agent they are not granted raises ``NoGrant``. What is derived from what they reach
(copies in forks, items, summaries) goes with it wherever it is.
"""

from __future__ import annotations

from cogitator_memory.cascade.rewind import REWOUND, RewindCascade
from cogitator_memory.cascade.users import Progress, UserCascade

__all__ = ["REWOUND", "MemoryCascade", "Progress"]


class MemoryCascade(UserCascade, RewindCascade):
    """Forgets, redacts and rewinds with what stands on the entries. ``grants``: who
    asks (None: trusted code, which reaches everything)."""
