"""The vectors that stand on entries, kept in step with them (a ``dependents.Dependent``).

When entries are deleted or redacted (or their thread is cleared or deleted), every
vector whose source is one of them goes; when a thread moves to another user, the copies
of its owner in its vectors (the ``user_id`` column, ``metadata.userId``) follow. Where
the store keeps its rows in the app's database (exact, pgvector) this happens in the
transaction of the change itself; for a store outside it (Qdrant) an outbox message is
written in that transaction and carried out after commit, retried by the sweeper until
done. Meanwhile searches never return what went: they check each hit against the source
and thread it names (``search/scoping.py``).

``forget_vectors`` is that step for any source ids: the items' dependent deletes the
vectors of the items it purges through it too (``items/forgetting.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cogitator_memory.dependents import Forgotten
from cogitator_memory.embeddings import fork_vectors, pending_vectors
from cogitator_memory.embeddings.models import Embedding, PendingVector
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.outbox import services as outbox
from cogitator_memory.outbox.models import OutboxMessage

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

__all__ = [
    "DELETE_SOURCES",
    "SET_OWNER",
    "EntryVectors",
    "forget_vectors",
    "register_outbox_handlers",
]

DELETE_SOURCES = "embeddings.delete_sources"
SET_OWNER = "embeddings.set_owner"
# Source ids per outbox message and per delete: bounds one message and one request.
IDS_PER_MESSAGE = 500


def forget_vectors(source_ids: Sequence[str], forgotten: Forgotten) -> None:
    """Delete every vector of these sources, whatever its index: in the open transaction
    where the store keeps its rows in the database (counted as ``vectors``), else by an
    outbox message per ``IDS_PER_MESSAGE`` sources, carried out after commit (the
    sources counted as ``vectors.queued``)."""
    ids = list(source_ids)
    store = get_embedding_store()
    for start in range(0, len(ids), IDS_PER_MESSAGE):
        chunk = ids[start : start + IDS_PER_MESSAGE]
        if store.transactional:
            forgotten["vectors"] += store.delete_by_sources(chunk)
        else:
            outbox.write(DELETE_SOURCES, {"source_ids": chunk})
            forgotten["vectors.queued"] += len(chunk)


class EntryVectors:
    """Queues the vectors of entries that come (a ``PendingVector`` each, in the
    transaction that adds them) and copies those of a fork's copies from their
    originals; deletes the vectors of entries that go; moves a thread's vectors with its
    owner.

    Its outbox messages (``OutboxMessage`` rows naming the entries) carry those changes
    to a store outside the database and are deleted once carried out: they are the
    forgetting itself, never something to forget (a delete of sources already gone
    deletes nothing; an owner change reaches only vectors that exist)."""

    name = "embeddings"
    models = (Embedding, OutboxMessage, PendingVector)

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """The copies of a fork get their originals' vectors (``fork_vectors``), and each
        entry the message index takes a pending vector, whose task is published once the
        transaction commits (the ``entry_added`` signal's receiver): a copy whose vector
        came with it is then done without a provider call."""
        fork_vectors.copy_fork_vectors(entries)
        pending_vectors.queue(entries)

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        # A pending vector goes with its entry (its key cascades); a redacted entry's
        # goes here, so that no worker embeds what was redacted.
        for start in range(0, len(entry_ids), IDS_PER_MESSAGE):
            chunk = list(entry_ids[start : start + IDS_PER_MESSAGE])
            PendingVector.objects.filter(pk__in=chunk).delete()
        forget_vectors(entry_ids, forgotten)

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        store = get_embedding_store()
        if store.transactional:
            store.set_owner(thread_id, user_id)
        else:
            outbox.write(SET_OWNER, {"thread_id": thread_id, "user_id": user_id})


def _delete_sources(payload: dict[str, Any]) -> None:
    get_embedding_store().delete_by_sources(list(payload["source_ids"]))


def _set_owner(payload: dict[str, Any]) -> None:
    get_embedding_store().set_owner(str(payload["thread_id"]), payload.get("user_id"))


def register_outbox_handlers() -> None:
    outbox.register_handler(DELETE_SOURCES, _delete_sources)
    outbox.register_handler(SET_OWNER, _set_owner)
    fork_vectors.register_outbox_handler()
