"""The vectors of a fork's copies, copied from their originals' instead of embedded again.

``fork_thread`` (``threads/branches.py``) copies a branch into a new thread, each copy
naming its original in ``metadata.forkOf``. A copy says what its original said, so the
original's vector in the message index is the vector the provider would give the copy:
``copy_fork_vectors`` (called by the entry vectors' dependent when entries are added)
stores it again for the copy, with the copy's id as source and the scope of the copy's
own thread (its agent, id and user: a fork never carries its origin's owner), and no
provider call. When the embedding task of a copy runs after commit, it finds the vector
present and sends nothing (``message_index.index_new_entries``).

A vector is copied only when the text it was made of is the copy's text: ``forkOf`` is
metadata like any other, and a vector copied for an entry that merely names another
would say what that other entry said. A copy whose original has no vector (the index
was off, its task has not run yet), or whose vector is of another size than the store
takes now, is left to the embedding task, like any new entry.

Where the store keeps its rows in the database (exact, pgvector) the vectors are copied
in the fork's transaction; for a store outside it (Qdrant) an outbox message is written
in that transaction and carried out after commit, before the copies' embedding tasks
are sent (the outbox's publishing is the first on-commit callback of the fork), and
retried by the sweeper until done. Copying again replaces the same vector, so a message
carried out twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from cogitator_memory.embeddings.message_index import (
    MESSAGE_SOURCE_TYPE,
    MESSAGES_INDEX,
    entry_embedding,
    entry_text,
    is_indexable,
    message_index_enabled,
)
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.types import (
    EmbeddingFilter,
    EmbeddingStore,
    NewEmbedding,
    StoredEmbedding,
)
from cogitator_memory.outbox import services as outbox
from cogitator_memory.threads.models import FORK_OF_KEY, Entry, Thread

__all__ = ["COPY_VECTORS", "copy_fork_vectors", "copy_vectors", "register_outbox_handler"]

COPY_VECTORS = "embeddings.copy_fork_vectors"
# Copies per read of their originals' vectors and per outbox message.
COPIES_PER_BATCH = 500
_MESSAGES_FILTER = EmbeddingFilter(source_type=MESSAGE_SOURCE_TYPE, index=MESSAGES_INDEX)


def originals_of(entries: Sequence[Entry]) -> dict[str, str]:
    """``{copy id: original id}`` of the entries that are copies and would be indexed."""
    copies: dict[str, str] = {}
    for entry in entries:
        original = (entry.metadata or {}).get(FORK_OF_KEY)
        if isinstance(original, str) and original and is_indexable(entry):
            copies[entry.pk] = original
    return copies


def _fits(store: EmbeddingStore, vector: StoredEmbedding) -> bool:
    """The original's vector can be stored now: the store takes its size."""
    if vector.vector is None:
        return False
    dimensions = getattr(store, "dimensions", None)
    return dimensions is None or len(vector.vector) == dimensions


def copy_vectors(
    store: EmbeddingStore, copies: Sequence[Entry], originals: Mapping[str, str]
) -> int:
    """Store for each copy the message-index vector of its original (``originals``:
    ``{copy id: original id}``), scoped by the copy's thread as it is now, when that
    vector was made of the copy's text. Returns how many vectors were stored."""
    copied = 0
    for start in range(0, len(copies), COPIES_PER_BATCH):
        chunk = [
            entry for entry in copies[start : start + COPIES_PER_BATCH] if entry.pk in originals
        ]
        wanted = sorted({originals[entry.pk] for entry in chunk})
        found = {
            vector.source_id: vector
            for vector in store.get_by_sources(wanted, filter=_MESSAGES_FILTER)
        }
        threads = Thread.objects.in_bulk(sorted({entry.thread_id for entry in chunk}))
        rows: list[NewEmbedding] = []
        for entry in chunk:
            vector = found.get(originals[entry.pk])
            thread = threads.get(entry.thread_id)
            if (
                vector is None
                or thread is None
                or not _fits(store, vector)
                or vector.content != entry_text(entry)
            ):
                continue
            rows.append(entry_embedding(entry, vector.vector or [], thread=thread))
        if rows:
            store.add(rows)
            copied += len(rows)
    return copied


def copy_fork_vectors(entries: Sequence[Entry]) -> int:
    """Give the copies among these new entries their originals' vectors (see the module):
    in the open transaction where the store is the database, returning how many were
    stored, else by an outbox message per ``COPIES_PER_BATCH`` copies (returns 0).
    Entries that are not copies cost nothing; nothing happens while the message index
    is off."""
    originals = originals_of(entries)
    if not originals or not message_index_enabled():
        return 0
    store = get_embedding_store()
    if store.transactional:
        return copy_vectors(store, [entry for entry in entries if entry.pk in originals], originals)
    pairs = list(originals.items())
    for start in range(0, len(pairs), COPIES_PER_BATCH):
        outbox.write(COPY_VECTORS, {"copies": dict(pairs[start : start + COPIES_PER_BATCH])})
    return 0


def _copy_after_commit(payload: dict[str, Any]) -> None:
    """Carry out an outbox message: copy the vectors of the copies that still stand.

    As the embedding of an entry does, this holds the locks of the copies' threads while
    it writes: a copy deleted or redacted meanwhile either went before the read below
    (and is skipped) or goes after the write (and its dependent deletes the vector)."""
    originals = {str(copy): str(original) for copy, original in dict(payload["copies"]).items()}
    if not message_index_enabled():
        return
    store = get_embedding_store()
    with transaction.atomic():
        thread_ids = set(
            Entry.objects.filter(pk__in=list(originals)).values_list("thread_id", flat=True)
        )
        # Locked in id order, as the embedding of entries does: no deadlock with it.
        list(
            Thread.objects.select_for_update()
            .filter(pk__in=sorted(thread_ids))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        copies = [
            entry
            for entry in Entry.objects.filter(pk__in=list(originals)).order_by("pk")
            if is_indexable(entry)
        ]
        copy_vectors(store, copies, originals)


def register_outbox_handler() -> None:
    outbox.register_handler(COPY_VECTORS, _copy_after_commit)
