"""What stands on entries and threads: the registry of dependents, kept in step with them.

Derived data (keyword postings and vectors of messages, memory items with their evidence
and vectors, memory file versions, extraction windows, job runs, and what later layers
add) never outlives its source, and copies of a thread's owner never lag behind it. The
thread services call these functions as an explicit step of every change, inside the
transaction that makes it:

- ``entries_added(entries)`` when entries are inserted (a new entry, the copies of a fork);
- ``forget_entries(entry_ids)`` when entries are deleted or redacted, or their thread is
  cleared or deleted;
- ``owner_changed(thread_id, agent_id, user_id)`` when a thread's user changes.

Each capability that keeps derived data registers a ``Dependent`` once, at start-up
(``AppConfig.ready``): the threads layer knows the registry, never the capabilities above
it. A dependent whose data lives in the same database changes it in the open transaction,
so a rollback keeps both; one whose data lives elsewhere (Qdrant) writes an outbox row in
that transaction (``cogitator_memory.outbox``), published after commit and retried by the
sweeper until done. A dependent that raises rolls the whole change back: nothing is
forgotten by half. Work that waits for the commit (embedding a new message) is not done
here: it follows the ``entry_added`` signal.

Some derived data stands on memory items rather than on entries (observations and the
playbook name the items and lessons they were written from). Its keepers register an
``ItemDependent``; ``items_purged(item_ids)`` is called in the transaction that deletes
the items, whichever way they go (their entries went, their scope was forgotten).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

__all__ = [
    "Dependent",
    "Forgotten",
    "ItemDependent",
    "dependents",
    "entries_added",
    "forget_entries",
    "item_dependents",
    "items_purged",
    "owner_changed",
    "register",
    "register_item_dependent",
]


class Forgotten(Counter[str]):
    """What a forget step took out, counted by the name a cascade's report gives it
    (``"items.purged"``, ``"items.trimmed"``, ``"entities"``, ``"summaries"``,
    ``"file_versions"``, ``"files"``, ``"vectors"``, ``"vectors.queued"`` (sources
    whose vectors an outbox message deletes after commit), ``"keyword_documents"``,
    ``"extraction_windows"``, ``"runs"``, ...). Dependents add to the one they are handed;
    ``forget_entries`` returns the sum."""


class Dependent(Protocol):
    """Derived data kept of entries and threads.

    ``models`` names the models whose rows the dependent keeps in step with the entries
    (a test walks every model of the app and fails when one that holds entry ids or text
    derived from entries is named by no dependent)."""

    name: str

    @property
    def models(self) -> tuple[type[Any], ...]:
        """The models whose rows this dependent keeps in step with the entries."""

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """Derive what must exist as soon as these new entries do (same transaction)."""

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        """Remove what stands on these entries (they are going, or their text is), and
        count it in ``forgotten``."""

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        """Update the copies of the thread's owner kept with its derived data."""


_dependents: dict[str, Dependent] = {}


def register(dependent: Dependent) -> None:
    """Register a dependent (again under the same name replaces it)."""
    _dependents[dependent.name] = dependent


def dependents() -> list[Dependent]:
    return list(_dependents.values())


def entries_added(entries: Sequence[Entry]) -> None:
    """Let every dependent derive what stands on new entries; call inside the transaction
    that inserts them."""
    if not entries:
        return
    for dependent in dependents():
        dependent.entries_added(entries)


def forget_entries(entry_ids: Sequence[str]) -> Forgotten:
    """Take what stands on these entries out of every store; call inside the transaction
    that deletes or redacts them. Returns what went, counted."""
    forgotten = Forgotten()
    ids = list(dict.fromkeys(entry_ids))
    if not ids:
        return forgotten
    for dependent in dependents():
        dependent.forget_entries(ids, forgotten)
    return forgotten


def owner_changed(thread_id: str, agent_id: str, user_id: str | None) -> None:
    """Bring the copies of a thread's owner up to date; call inside the transaction that
    changes the thread's ``user_id``."""
    for dependent in dependents():
        dependent.owner_changed(thread_id, agent_id, user_id)


class ItemDependent(Protocol):
    """Derived data that names memory items (observations, playbook rules).

    ``models`` names the models whose rows it keeps in step with the items."""

    name: str

    @property
    def models(self) -> tuple[type[Any], ...]:
        """The models whose rows this dependent keeps in step with the items."""

    def items_purged(self, item_ids: Sequence[str], forgotten: Forgotten) -> None:
        """Remove or redact what names these items (they are being deleted, in the open
        transaction), and count it in ``forgotten``."""


_item_dependents: dict[str, ItemDependent] = {}


def register_item_dependent(dependent: ItemDependent) -> None:
    """Register an item dependent (again under the same name replaces it)."""
    _item_dependents[dependent.name] = dependent


def item_dependents() -> list[ItemDependent]:
    return list(_item_dependents.values())


def items_purged(item_ids: Sequence[str], forgotten: Forgotten | None = None) -> Forgotten:
    """Let every item dependent forget what names these items; call inside the
    transaction that deletes them. Returns ``forgotten`` (a new one when not given)."""
    forgotten = forgotten if forgotten is not None else Forgotten()
    ids = list(dict.fromkeys(item_ids))
    if not ids:
        return forgotten
    for dependent in item_dependents():
        dependent.items_purged(ids, forgotten)
    return forgotten
