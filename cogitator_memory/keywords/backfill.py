"""Filling the keyword index for rows written before it existed (migration 0020)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from cogitator_memory.keywords.entries import entry_document
from cogitator_memory.keywords.models import DocumentKind
from cogitator_memory.keywords.postings import IndexedDocument, KeywordIndex

# Rows read and indexed per round: one page query and a few upserts each.
FILL_BATCH_SIZE = 1000
# Rows between two progress lines.
PROGRESS_EVERY = 10_000


def _pages(model: Any, fields: list[str]) -> Any:
    """Rows of ``model`` by keyset pages of their primary key."""
    after = None
    while True:
        page = model.objects.order_by("pk")
        if after is not None:
            page = page.filter(pk__gt=after)
        rows = list(page.only(*fields)[:FILL_BATCH_SIZE])
        if not rows:
            return
        yield rows
        after = rows[-1].pk


def _report(kind: str, done: int, total: int) -> None:
    sys.stdout.write(f"\n  keyword index: {done}/{total} {kind} rows")
    sys.stdout.flush()


def fill_keyword_index(
    index: KeywordIndex,
    *,
    embedding_model: Any,
    entry_model: Any,
    report: Callable[[str, int, int], None] = _report,
) -> None:
    """Index every embedding and every message or tool result not redacted; a progress
    line every ``PROGRESS_EVERY`` rows when there are more than that."""
    embedding_fields = [
        "id",
        "content",
        "thread_id",
        "agent_id",
        "user_id",
        "source_type",
        "index_name",
    ]
    total = embedding_model.objects.count()
    done = 0
    for rows in _pages(embedding_model, embedding_fields):
        index.add(
            DocumentKind.EMBEDDING,
            [
                IndexedDocument(
                    document_id=row.pk,
                    text=row.content,
                    thread_id=row.thread_id,
                    agent_id=row.agent_id,
                    user_id=row.user_id,
                    source_type=row.source_type,
                    index_name=row.index_name,
                )
                for row in rows
            ],
        )
        done += len(rows)
        if total > PROGRESS_EVERY and (done % PROGRESS_EVERY < len(rows) or done == total):
            report("embedding", done, total)
    entry_fields = [
        "id",
        "thread_id",
        "seq",
        "type",
        "content",
        "tool_results",
        "redaction",
    ]
    total = entry_model.objects.count()
    done = 0
    for rows in _pages(entry_model, entry_fields):
        documents = [document for row in rows if (document := entry_document(row))]
        if documents:
            index.add(DocumentKind.ENTRY, documents)
        done += len(rows)
        if total > PROGRESS_EVERY and (done % PROGRESS_EVERY < len(rows) or done == total):
            report("entry", done, total)
