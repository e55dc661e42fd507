"""The keyword index stays equal to what its rows hold, through every write of the stores
and the thread services, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest
from django.db import transaction

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.embeddings.types import EmbeddingFilter, NewEmbedding
from cogitator_memory.keywords.backfill import fill_keyword_index
from cogitator_memory.keywords.entries import entry_document
from cogitator_memory.keywords.models import (
    DocumentKind,
    KeywordCorpus,
    KeywordPosting,
    KeywordTerm,
)
from cogitator_memory.keywords.postings import COUNTED_KINDS, KeywordIndex, document_terms
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db


def embedding(source_id: str, content: str, **metadata: Any) -> NewEmbedding:
    return NewEmbedding(
        source_type="message",
        source_id=source_id,
        content=content,
        vector=[1.0, 0.5, 0.25],
        metadata={"index": "messages", **metadata},
    )


def recount() -> dict[str, Any]:
    """The index as the rows say it should be: per corpus columns, documents, tokens and
    documents per term; per document, its term counts."""
    corpora: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
    terms: Counter[tuple[Any, ...]] = Counter()
    postings = {}
    documents = [
        (
            DocumentKind.EMBEDDING.value,
            (row.thread_id, row.agent_id, row.user_id, row.source_type, row.index_name),
            row.pk,
            row.content,
        )
        for row in Embedding.objects.all()
    ]
    for entry in Entry.objects.all():
        document = entry_document(entry)
        if document is not None:
            documents.append(
                (DocumentKind.ENTRY.value, document.corpus_columns(), entry.pk, document.text)
            )
    for kind, columns, document_id, text in documents:
        length, counts = document_terms(text)
        corpora[(kind, *columns)][0] += 1
        corpora[(kind, *columns)][1] += length
        if kind in COUNTED_KINDS:
            for term in counts:
                terms[(kind, *columns, term)] += 1
        postings[(kind, document_id)] = (length, dict(counts))
    return {
        "corpora": {key: tuple(value) for key, value in corpora.items()},
        "terms": dict(terms),
        "postings": postings,
    }


def stored_index() -> dict[str, Any]:
    """The index as its tables hold it, rows counting nothing left out."""
    columns = {
        corpus.pk: (
            corpus.kind,
            corpus.thread_id,
            corpus.agent_id,
            corpus.user_id,
            corpus.source_type,
            corpus.index_name,
        )
        for corpus in KeywordCorpus.objects.all()
    }
    corpora = {
        columns[corpus.pk]: (corpus.documents, corpus.total_length)
        for corpus in KeywordCorpus.objects.all()
        if corpus.documents or corpus.total_length
    }
    terms = {
        (*columns[corpus_id], term): held
        for corpus_id, term, held in KeywordTerm.objects.values_list(
            "corpus_id", "term", "documents"
        )
        if held
    }
    postings: dict[tuple[str, str], tuple[int, dict[str, int]]] = {}
    for corpus_id, document_id, term, count, length in KeywordPosting.objects.values_list(
        "corpus_id", "document_id", "term", "count", "length"
    ):
        key = (columns[corpus_id][0], document_id)
        _, counts = postings.setdefault(key, (length, {}))
        if term:
            counts[term] = count
    return {"corpora": corpora, "terms": terms, "postings": postings}


def test_store_writes_keep_the_index_equal_to_the_rows():
    store = ExactEmbeddingStore()
    # added, two threads, one shared row
    store.add(
        [
            embedding("a", "Hiking boots by the lake.", threadId="t1", agentId="ag", userId="u1"),
            embedding("b", "The lake froze; hiking stopped.", threadId="t1", agentId="ag"),
            embedding("c", "Boots, boots and more boots.", threadId="t2", agentId="ag"),
            embedding("d", "", threadId="t2", agentId="ag"),
            embedding("shared", "A shared note about hiking."),
        ]
    )
    assert stored_index() == recount()
    # the same source again replaces its row and its postings
    store.add([embedding("a", "Skating on the frozen lake.", threadId="t1", agentId="ag")])
    assert stored_index() == recount()
    # deleted by id, by source, by filter
    store.delete([Embedding.objects.get(source_id="b").pk])
    assert stored_index() == recount()
    store.delete_by_sources(["shared"])
    assert stored_index() == recount()
    store.delete_by_filter(EmbeddingFilter(thread_id="t2"))
    assert stored_index() == recount()
    assert set(Embedding.objects.values_list("source_id", flat=True)) == {"a"}


def test_a_term_no_document_holds_any_more_leaves_the_vocabulary():
    store = ExactEmbeddingStore()
    store.add(
        [
            embedding("a", "Zanzibar lockers.", threadId="t1", agentId="ag"),
            embedding("b", "Plain lockers.", threadId="t1", agentId="ag"),
        ]
    )
    assert KeywordTerm.objects.filter(term__startswith="zanzibar").exists()

    store.delete_by_sources(["a"])

    assert not KeywordTerm.objects.filter(term__startswith="zanzibar").exists()
    assert KeywordTerm.objects.filter(term__startswith="locker", documents=1).exists()
    assert stored_index() == recount()


def test_a_new_owner_moves_a_threads_corpora_and_merges_them():
    # given rows of one thread under two users
    store = ExactEmbeddingStore()
    store.add(
        [
            embedding("a", "Hiking boots by the lake.", threadId="t1", agentId="ag", userId="u1"),
            embedding("b", "The lake froze.", threadId="t1", agentId="ag", userId="u2"),
            embedding("c", "Boots again.", threadId="t1", agentId="ag"),
        ]
    )
    # when the thread moves to u2
    store.set_owner("t1", "u2")
    # then one corpus of u2 holds all three
    assert stored_index() == recount()
    assert KeywordCorpus.objects.filter(kind="embedding", documents__gt=0).count() == 1


def test_a_rolled_back_write_leaves_nothing_in_the_index():
    store = ExactEmbeddingStore()
    store.add([embedding("a", "Hiking boots.", threadId="t1", agentId="ag")])
    before = stored_index()
    with pytest.raises(RuntimeError), transaction.atomic():
        store.add([embedding("b", "Lake and boots.", threadId="t1", agentId="ag")])
        services.create_thread("ag", thread_id="t9")
        services.add_entry("t9", role="user", content="boots on the lake")
        raise RuntimeError("rolled back")
    assert stored_index() == before


def test_entry_writes_keep_the_index_equal_to_the_entries():
    services.create_thread("ag", thread_id="t1")
    first = services.add_entry("t1", role="user", content="Hiking boots by the lake.")
    second = services.add_entry("t1", role="assistant", content="The lake froze.")
    services.add_entry("t1", type="label", event={"label": "hiking"})
    third = services.add_entry("t1", role="user", content="Boots, boots, boots.")
    assert stored_index() == recount()
    services.redact_entry(second.pk, reason="private")
    assert stored_index() == recount()
    services.delete_entry(first.pk)
    assert stored_index() == recount()
    services.fork_thread("t1", third.pk, "t1-fork")
    assert stored_index() == recount()
    services.delete_thread("t1")
    assert stored_index() == recount()


def test_the_backfill_fills_the_index_the_writes_would_have():
    # given rows written through the services, then an emptied index
    store = ExactEmbeddingStore()
    store.add([embedding("a", "Hiking boots by the lake.", threadId="t1", agentId="ag")])
    services.create_thread("ag", thread_id="t1")
    services.add_entry("t1", role="user", content="The lake froze.")
    written = stored_index()
    KeywordPosting.objects.all().delete()
    KeywordTerm.objects.all().delete()
    KeywordCorpus.objects.all().delete()
    # when
    reports: list[tuple[str, int, int]] = []
    fill_keyword_index(
        KeywordIndex(),
        embedding_model=Embedding,
        entry_model=Entry,
        report=lambda *args: reports.append(args),
    )
    # then
    assert stored_index() == written == recount()
