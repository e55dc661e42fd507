"""The vectors that stand on entries, kept in step with them (a ``dependents.Dependent``).

When entries are deleted or redacted (or their thread is cleared or deleted), every
vector whose source is one of them goes; when a thread moves to another user, the copies
of its owner in its vectors (the ``user_id`` column, ``metadata.userId``) follow. Where
the store keeps its rows in the app's database (exact, pgvector) this happens in the
transaction of the change itself; for a store outside it (Qdrant) an outbox message is
written in that transaction and carried out after commit, retried by the sweeper until
done. Meanwhile searches never return what went: they check each hit against the entry
and thread it names (``search/scoping.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cogitator_memory.dependents import Forgotten
from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.outbox import services as outbox

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

__all__ = ["DELETE_SOURCES", "SET_OWNER", "EntryVectors", "register_outbox_handlers"]

DELETE_SOURCES = "embeddings.delete_sources"
SET_OWNER = "embeddings.set_owner"
# Source ids per outbox message and per delete: bounds one message and one request.
IDS_PER_MESSAGE = 500


class EntryVectors:
    """Deletes the vectors of entries that go; moves a thread's vectors with its owner."""

    name = "embeddings"
    models = (Embedding,)

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """Embedding waits for the commit (the ``entry_added`` signal enqueues it)."""

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        store = get_embedding_store()
        for start in range(0, len(entry_ids), IDS_PER_MESSAGE):
            chunk = list(entry_ids[start : start + IDS_PER_MESSAGE])
            if store.transactional:
                forgotten["vectors"] += store.delete_by_sources(chunk)
            else:
                outbox.write(DELETE_SOURCES, {"source_ids": chunk})
                forgotten["vectors.queued"] += len(chunk)

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
