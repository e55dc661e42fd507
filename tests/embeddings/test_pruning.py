"""One pruner for every source type: the vectors whose source went (an entry deleted or
redacted, an item purged, any source registered with ``embeddings.sources``) are deleted
from any store; vectors of a source type nobody registered are left alone. Searches leave
the same hits out before the pruner runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings

from cogitator_memory.embeddings import message_index, sources
from cogitator_memory.embeddings.pruning import PruneProgress, prune_vectors
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.sources import VectorSource, register_source, vector_sources
from cogitator_memory.embeddings.types import EmbeddingFilter
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import Evidence, MemoryItem
from cogitator_memory.items.vectors import ITEM_VECTORS
from cogitator_memory.search.bm25 import keyword_search
from cogitator_memory.search.hybrid import hybrid_search, semantic_search
from cogitator_memory.tasks.sweeper import prune_vectors_task
from cogitator_memory.threads.models import Entry, Thread
from tests.lineage_support import tell_a_secret
from tests.search.support import CONCEPT_PROVIDER, write_text

pytestmark = pytest.mark.django_db

STORES = ["exact", "qdrant"]


@pytest.fixture(params=STORES)
def store_name(request: pytest.FixtureRequest) -> Iterator[str]:
    settings = {"EMBEDDINGS": {"PROVIDER": CONCEPT_PROVIDER, "STORE": request.param}}
    if request.param == "qdrant":
        settings["EMBEDDINGS"]["QDRANT_PATH"] = ":memory:"
    with override_settings(COGITATOR_MEMORY=settings):
        yield request.param
        if request.param == "qdrant":
            get_embedding_store().close()  # type: ignore[attr-defined]


@pytest.fixture
def notes_source(monkeypatch: pytest.MonkeyPatch) -> VectorSource:
    """A source type of the test's own: a vector of a thread, standing while the thread
    does. Registered for the test alone."""
    monkeypatch.setattr(sources, "_sources", dict(sources._sources))
    source = VectorSource("thread-note", "notes", standing=lambda: Thread.objects.all())
    register_source(source)
    return source


def stored_sources() -> set[tuple[str, str]]:
    store = get_embedding_store()
    return {
        (embedding.source_type, embedding.source_id)
        for batch in store.iter_source_ids()
        for embedding in store.get_by_sources(batch)
    }


def test_the_app_registers_every_source_type_it_writes() -> None:
    assert {source.key for source in vector_sources()} >= {
        (message_index.MESSAGE_SOURCE_TYPE, message_index.MESSAGES_INDEX),
        ITEM_VECTORS.key,
    }


def test_the_pruner_deletes_the_orphans_of_every_source_type(
    store_name: str, notes_source: VectorSource
) -> None:
    # given vectors of every kind: messages, an item, notes of threads, and a document
    told = tell_a_secret(thread_id="t-1")
    gone_thread = Thread.objects.create(id="t-gone", agent_id="agent-a")
    message_index.index_entries([told.entry.pk, told.other.pk])
    store = get_embedding_store()
    for thread_id in ("t-1", "t-gone"):
        write_text(thread_id, "a note", source_type="thread-note", index="notes", store=store)
    write_text("doc-1", "a document", store=store)
    # when each source goes behind the services' back: an entry redacted, the item
    # deleted, a thread deleted
    Entry.objects.filter(pk=told.entry.pk).update(redaction={"at": "2026-01-01T00:00:00Z"})
    Evidence.objects.filter(item_id=told.item.pk).delete()
    MemoryItem.objects.filter(pk=told.item.pk).delete()
    gone_thread.delete()
    seen: list[PruneProgress] = []
    result = prune_vectors(batch_size=1, progress=seen.append)
    # then each orphan is deleted, whatever its type, and the document is left alone
    assert stored_sources() == {
        ("message", told.other.pk),
        ("thread-note", "t-1"),
        ("document", "doc-1"),
    }
    assert (result.checked, result.deleted) == (5, 3)
    assert dict(result.deleted_by_type) == {"message": 1, "item": 1, "thread-note": 1}
    assert seen[-1] == result and len(seen) == 5


def test_the_sweeper_task_prunes_every_source_type() -> None:
    with override_settings(
        COGITATOR_MEMORY={"EMBEDDINGS": {"PROVIDER": CONCEPT_PROVIDER, "STORE": "exact"}}
    ):
        told = tell_a_secret()
        MemoryItem.objects.filter(pk=told.item.pk).delete()
        assert prune_vectors_task.apply().get() == {"checked": 1, "deleted": 1}
        assert stored_sources() == set()


def test_searches_leave_out_the_hits_of_any_source_type_whose_source_went(
    store_name: str, notes_source: VectorSource
) -> None:
    # given a note of each of two threads, and one thread gone behind the services' back
    store = get_embedding_store()
    for thread_id in ("t-kept", "t-gone"):
        Thread.objects.create(id=thread_id, agent_id="agent-a")
        write_text(thread_id, "dinner plans", source_type="thread-note", index="notes", store=store)
    Thread.objects.filter(pk="t-gone").delete()
    everything = EmbeddingFilter()
    # when / then every search finds the note of the thread that stands, and only it
    for grants in (None, Grants.everything()):
        by_vector = semantic_search("dinner", limit=10, filter=everything, grants=grants)
        fused = hybrid_search("dinner", limit=10, filter=everything, grants=grants).hits
        assert [hit.embedding.source_id for hit in by_vector] == ["t-kept"]
        assert [hit.embedding.source_id for hit in fused] == ["t-kept"]
        if store_name == "exact":  # the one store that keeps a keyword index
            by_word = keyword_search("dinner", limit=10, filter=everything, grants=grants)
            assert [hit.embedding.source_id for hit in by_word] == ["t-kept"]
