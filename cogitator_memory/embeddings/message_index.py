"""The message index: one vector per message of a thread, kept in the embedding store.

Entries of type message or tool_result that have text and are not redacted are embedded
in the background (``tasks/triggers.py`` enqueues ``tasks/embeddings.py``) and
stored with source_type ``"message"``, source_id the entry id and the metadata
``{"index": "messages", "agentId", "threadId", "userId"}`` of their thread. A deleted or
redacted entry loses its vectors, and so do the entries of a cleared or deleted thread.
The stores replace the vector of the same source, so indexing an entry again never
duplicates it. Without an embedding provider the index is off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from django.db import transaction

from cogitator_memory.conf import memory_settings
from cogitator_memory.embeddings import pending_vectors
from cogitator_memory.embeddings.models import (
    AGENT_ID_KEY,
    INDEX_KEY,
    THREAD_ID_KEY,
    USER_ID_KEY,
)
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.services import (
    EmbeddingService,
    get_embedding_service,
)
from cogitator_memory.embeddings.sources import VectorSource
from cogitator_memory.embeddings.types import EmbeddingFilter, EmbeddingStore, NewEmbedding
from cogitator_memory.exceptions import (
    EmbeddingServiceError,
    InvalidInput,
    MessageIndexOff,
    ThreadNotFound,
)
from cogitator_memory.limits import check_limit
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry, Thread
from cogitator_memory.threads.querysets import EntryQuerySet
from cogitator_memory.threads.text import entry_text as full_entry_text

__all__ = [
    "MAX_TEXT_CHARS",
    "MESSAGES_INDEX",
    "MESSAGE_SOURCE_TYPE",
    "MESSAGE_VECTORS",
    "MessageIndexOff",
    "ReindexProgress",
    "all_indexed",
    "entries_to_reindex",
    "entry_embedding",
    "entry_text",
    "index_entries",
    "index_new_entries",
    "is_indexable",
    "message_index_enabled",
    "reindex",
    "unindex_entries",
]

MESSAGES_INDEX = "messages"
MESSAGE_SOURCE_TYPE = "message"
# Providers refuse texts over their input limit (2,048 tokens for Google's text
# embeddings, 8,191 for OpenAI's). At about 4 characters a token this stays under each,
# and the start of a long message says what it is about.
MAX_TEXT_CHARS = 8000
_MESSAGES_FILTER = EmbeddingFilter(source_type=MESSAGE_SOURCE_TYPE, index=MESSAGES_INDEX)
# The message index's vectors stand while their entry exists unredacted (registered with
# ``embeddings.sources`` in ``AppConfig.ready``).
MESSAGE_VECTORS = VectorSource(
    MESSAGE_SOURCE_TYPE,
    MESSAGES_INDEX,
    standing=lambda: Entry.objects.filter(redaction__isnull=True),
    noun="entries",
)


def message_index_enabled() -> bool:
    """Whether new messages are embedded: an embedding provider is configured."""
    return bool(memory_settings.EMBEDDINGS.get("PROVIDER"))


# --- what is indexed ---------------------------------------------------------------------


def entry_text(entry: Entry) -> str:
    """The text an entry is found by (``threads.text.entry_text``), cut to
    ``MAX_TEXT_CHARS``; empty for session events."""
    return full_entry_text(entry)[:MAX_TEXT_CHARS]


def is_indexable(entry: Entry) -> bool:
    """A message or tool result, not redacted, with text."""
    return entry.type in CONVERSATION_TYPES and not entry.is_redacted and bool(entry_text(entry))


def entry_embedding(
    entry: Entry, vector: Sequence[float], *, thread: Thread | None = None
) -> NewEmbedding:
    """The vector of an entry as the store takes it, scoped by its thread's agentId,
    id and userId (keys whose value is None are left out)."""
    thread = thread or entry.thread
    scope = {
        INDEX_KEY: MESSAGES_INDEX,
        AGENT_ID_KEY: thread.agent_id,
        THREAD_ID_KEY: thread.id,
        USER_ID_KEY: (thread.metadata or {}).get(USER_ID_KEY),
    }
    return NewEmbedding(
        source_type=MESSAGE_SOURCE_TYPE,
        source_id=entry.id,
        vector=vector,
        content=entry_text(entry),
        metadata={key: value for key, value in scope.items() if value is not None},
    )


# --- indexing ------------------------------------------------------------------------------


def _embed(service: EmbeddingService, texts: list[str]) -> list[list[float]]:
    vectors = service.embed(texts)
    if len(vectors) != len(texts):
        raise EmbeddingServiceError(
            service.provider, f"returned {len(vectors)} vectors for {len(texts)} texts"
        )
    return vectors


def _store_unless_changed(
    store: EmbeddingStore,
    embedded: list[Entry],
    vectors: list[list[float]],
    finish: Callable[[], None] | None = None,
) -> int:
    """Store the vectors of the entries still indexable now, and call ``finish`` in the
    same transaction; returns how many."""
    with transaction.atomic():
        # The thread services lock a thread's row before they redact or delete its
        # entries. Holding these locks while the vectors are written means a redaction
        # or deletion either committed before the read below (the entry is skipped) or
        # commits after the write (and its signal deletes the vector): a vector of text
        # that was redacted meanwhile is never left behind. Locked in id order, as no
        # writer holds two threads, so no deadlock.
        threads = {
            thread.pk: thread
            for thread in Thread.objects.select_for_update()
            .filter(pk__in=sorted({entry.thread_id for entry in embedded}))
            .order_by("pk")
        }
        current = Entry.objects.in_bulk([entry.pk for entry in embedded])
        rows = [
            entry_embedding(current[entry.pk], vector, thread=threads[entry.thread_id])
            for entry, vector in zip(embedded, vectors, strict=True)
            if entry.pk in current
            and entry.thread_id in threads
            and is_indexable(current[entry.pk])
        ]
        if rows:
            store.add(rows)
        if finish is not None:
            finish()
    return len(rows)


def _drop_from_index(store: EmbeddingStore, entry_ids: list[str]) -> None:
    """Delete the message-index vectors of entries that should not have one. Only this
    index: vectors other indexes keep of an entry are theirs to manage."""
    stale = store.get_by_sources(entry_ids, filter=_MESSAGES_FILTER)
    if stale:
        store.delete([embedding.id for embedding in stale])


def index_entries(
    entry_ids: Sequence[str],
    *,
    only_missing: bool = False,
    finish: Callable[[], None] | None = None,
) -> int:
    """Embed these entries in one batch and store their vectors, replacing any stored.

    Ids of entries that are gone are skipped. Entries that are not indexable (session
    events, redacted, no text) lose any vector the message index has of them. With
    ``only_missing``, entries that already have a vector in the index keep it and are not
    sent to the provider (a task delivered twice embeds once). ``finish`` is called in
    the transaction that stores the vectors (or at the end, when none is stored): the
    pending rows of a batch go with it. Does nothing when the index is off. Returns how
    many entries were embedded and stored.

    Raises ``EmbeddingServiceError`` when the provider fails; nothing is stored then.
    """
    service = get_embedding_service()
    if service is None:
        return 0
    ids = list(dict.fromkeys(entry_ids))
    entries = list(Entry.objects.filter(pk__in=ids).select_related("thread").order_by("pk"))
    if not entries:
        if finish is not None:
            finish()
        return 0
    store = get_embedding_store()
    wanted = [entry for entry in entries if is_indexable(entry)]
    unwanted = [entry.pk for entry in entries if not is_indexable(entry)]
    if unwanted:
        _drop_from_index(store, unwanted)
    if only_missing and wanted:
        present = _indexed_sources(store, [entry.pk for entry in wanted])
        wanted = [entry for entry in wanted if entry.pk not in present]
    if not wanted:
        if finish is not None:
            finish()
        return 0
    vectors = _embed(service, [entry_text(entry) for entry in wanted])
    return _store_unless_changed(store, wanted, vectors, finish)


def _batch_size() -> int:
    size = memory_settings.EMBEDDINGS.get("BATCH_SIZE") or 64
    return max(1, int(size))


def _all_indexed(store: EmbeddingStore, ids: list[str]) -> bool:
    return not _missing_vectors(store, ids)


def all_indexed(entry_ids: Sequence[str]) -> bool:
    """Whether every one of these entries has a vector in the message index (False when
    the index is off): the task of an entry an earlier batch took has nothing to do."""
    if get_embedding_service() is None:
        return False
    return _all_indexed(get_embedding_store(), list(dict.fromkeys(entry_ids)))


def _indexed_sources(store: EmbeddingStore, ids: list[str]) -> set[str]:
    """Those of these ids that have a vector in the message index. A store that can tell
    without reading the vectors (``sources_present``) is asked so; any other through
    ``get_by_sources``."""
    present = getattr(store, "sources_present", None)
    if present is not None:
        return set(present(ids, filter=_MESSAGES_FILTER))
    return {embedding.source_id for embedding in store.get_by_sources(ids, filter=_MESSAGES_FILTER)}


def _missing_vectors(store: EmbeddingStore, ids: list[str]) -> list[str]:
    """Those of these ids that have no vector in the message index, in their order."""
    present = _indexed_sources(store, ids)
    return [entry_id for entry_id in ids if entry_id not in present]


def index_new_entries(entry_ids: Sequence[str], *, batch_size: int | None = None) -> int:
    """Embed new entries, and with them other entries that wait for a vector, in one
    provider call and one store write.

    The entries waiting are the pending vectors (``embeddings/pending_vectors.py``),
    written with each entry: a batch takes these entries first, then those waiting
    longest in any thread, up to ``batch_size`` (``EMBEDDINGS["BATCH_SIZE"]`` by
    default), and no two workers take the same entry. The tasks of the entries a batch
    took then find nothing to do. One call may hold entries of several tenants: each
    vector is stored with the scope of its own entry's thread. Entries with no pending
    vector and no vector (written while the index was off) are queued first. Returns how
    many entries were embedded and stored; a provider that fails puts the batch back for
    a later try.
    """
    if get_embedding_service() is None:
        return 0
    ids = list(dict.fromkeys(entry_ids))
    if not ids:
        return 0
    size = _batch_size() if batch_size is None else batch_size
    check_limit(size, field="batch_size")
    missing = _missing_vectors(get_embedding_store(), ids)
    if missing:
        pending_vectors.queue(list(Entry.objects.filter(pk__in=missing).select_related("thread")))
    # Also when these have their vectors: others may be waiting, and a pending row of an
    # entry whose vector came another way (a fork's copy) goes.
    return pending_vectors.embed_pending(ids, batch_size=size)


def unindex_entries(entry_ids: Sequence[str]) -> int:
    """Delete every vector of these entries (they were deleted or redacted), whatever
    the index. Returns how many vectors were deleted."""
    ids = list(dict.fromkeys(entry_ids))
    if not ids:
        return 0
    return get_embedding_store().delete_by_sources(ids)


# --- re-indexing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReindexProgress:
    """Where a re-index stands after a batch.

    ``total``: entries to go through when the run started (after ``resume_from``);
    ``done``: entries gone through so far; ``embedded``: of those, how many were embedded;
    ``last_entry_id``: the last entry gone through, to resume after.
    """

    total: int
    done: int
    embedded: int
    last_entry_id: str | None


def entries_to_reindex(
    *,
    thread_id: str | None = None,
    agent_id: str | None = None,
    all_threads: bool = False,
    resume_from: str | None = None,
) -> EntryQuerySet:
    """Messages and tool results of one thread, of one agent's threads, or of every
    thread, in id order, after ``resume_from`` when given.

    Raises ``InvalidInput`` unless exactly one scope is given, and ``ThreadNotFound``.
    """
    given = [thread_id is not None, agent_id is not None, all_threads]
    if given.count(True) != 1:
        raise InvalidInput({"scope": "Give exactly one of thread_id, agent_id or all_threads."})
    entries: EntryQuerySet = Entry.objects.of_types(None)
    if thread_id is not None:
        if not Thread.objects.filter(pk=thread_id).exists():
            raise ThreadNotFound(thread_id)
        entries = entries.of_thread(thread_id)
    elif agent_id is not None:
        entries = entries.filter(thread__agent_id=agent_id)
    if resume_from is not None:
        entries = entries.filter(pk__gt=resume_from)
    return entries.order_by("pk")


def _id_batches(entries: EntryQuerySet, batch_size: int) -> Iterator[list[str]]:
    # Keyset pages by id: each page is one short query, and entries added meanwhile
    # with a greater id are still reached.
    after: str | None = None
    while True:
        page = entries if after is None else entries.filter(pk__gt=after)
        ids = list(page.values_list("pk", flat=True)[:batch_size])
        if not ids:
            return
        yield ids
        after = ids[-1]


def reindex(
    *,
    thread_id: str | None = None,
    agent_id: str | None = None,
    all_threads: bool = False,
    batch_size: int | None = None,
    resume_from: str | None = None,
    progress: Callable[[ReindexProgress], None] | None = None,
    only_missing: bool = False,
) -> ReindexProgress:
    """Embed again every message and tool result of one thread, of one agent or of
    every thread, in batches of ``batch_size`` entries (one provider request each,
    ``EMBEDDINGS["BATCH_SIZE"]`` by default), replacing their vectors. Redacted entries
    and entries without text lose theirs.

    With ``only_missing``, entries that have a vector keep it and are not sent: the
    entries written while the index was off, or whose pending vector is dead, are
    embedded, and a dead pending vector of an entry embedded goes.

    Entries are gone through in id order; ``progress`` is called once before the first
    batch and after each one. A run stopped part way resumes with
    ``resume_from=<last_entry_id of the last progress>``.

    Raises ``MessageIndexOff`` without a provider, ``InvalidInput`` for a bad scope or
    batch size, ``ThreadNotFound``, and ``EmbeddingServiceError`` when the provider fails
    (the batches before it are kept). Returns the final progress.
    """
    if get_embedding_service() is None:
        raise MessageIndexOff()
    size = memory_settings.EMBEDDINGS.get("BATCH_SIZE") if batch_size is None else batch_size
    check_limit(size, field="batch_size")
    entries = entries_to_reindex(
        thread_id=thread_id, agent_id=agent_id, all_threads=all_threads, resume_from=resume_from
    )
    state = ReindexProgress(total=entries.count(), done=0, embedded=0, last_entry_id=resume_from)
    if progress is not None:
        progress(state)
    for ids in _id_batches(entries, size):
        embedded = index_entries(ids, only_missing=only_missing)
        # What is embedded now waits for nothing: its pending rows, dead or not, go.
        pending_vectors.drop_embedded(ids)
        state = ReindexProgress(
            total=state.total,
            done=state.done + len(ids),
            embedded=state.embedded + embedded,
            last_entry_id=ids[-1],
        )
        if progress is not None:
            progress(state)
    return state
