"""Hybrid with the real ``MemoryRetriever``: older turns and items recalled by keyword
(no embedding provider) and through the message index, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
from cogitator_memory.embeddings import message_index
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemKind, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem
from cogitator_memory.recall.retriever import MemoryRetriever
from tests.context.support import AGENT, USER, conversation, new_thread, say
from tests.search.support import CONCEPT_PROVIDER, ConceptEmbeddings, embeddings_settings

pytestmark = pytest.mark.django_db

AS_OF = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)
APRIL = datetime(2026, 4, 10, 18, 30, tzinfo=UTC)


def rome_thread() -> tuple[str, list]:
    thread = new_thread()
    question = say(thread, "user", "Which hotel should we book in Rome?", created_at=APRIL)
    reply = say(
        thread,
        "assistant",
        "Book Hotel Raphael near Piazza Navona.",
        created_at=APRIL + timedelta(minutes=1),
    )
    conversation(thread, 30, start=datetime(2026, 6, 1, tzinfo=UTC))
    return thread, [question, reply]


def hybrid(**deps: object) -> ContextBuilder:
    return ContextBuilder(
        ContextBuilderConfig(
            max_tokens=500, reserve_tokens=0, strategy="hybrid", time_zone="Europe/Lisbon"
        ),
        ContextBuilderDeps(clock=lambda: AS_OF, **deps),  # type: ignore[arg-type]
    )


def test_hybrid_recalls_an_older_turn_by_keyword_without_embeddings() -> None:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(None)):
        thread, rome = rome_thread()
        context = hybrid().build(
            thread, AGENT, user_id=USER, current_input="Which hotel in Rome did we book?"
        )
    assert context.recalled is not None
    assert rome[0] in context.recalled.entries and rome[1] in context.recalled.entries
    assert context.memory_context is not None
    assert (
        "Earlier in this conversation:\n"
        "- [Fri 2026-04-10 19:30] user: Which hotel should we book in Rome?\n"
        "  [Fri 2026-04-10 19:31] assistant: Book Hotel Raphael near Piazza Navona."
    ) in context.memory_context
    assert [e.source for e in context.errors] == []
    # and the history is the newest run, without the recalled turns
    assert rome[0] not in context.dropped.entries
    assert context.messages[-2]["cache_breakpoint"] is True


def test_hybrid_recalls_items_that_no_longer_hold_with_their_interval() -> None:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(None)):
        thread = new_thread()
        conversation(thread, 3)
        MemoryItems(clock=lambda: AS_OF).write(
            MemoryScope(AGENT, user_id=USER),
            NewItem(
                kind=ItemKind.EVENT,
                subject="Ana",
                attribute="hotel in Rome",
                value="Hotel Raphael",
                content="Ana stayed at Hotel Raphael in Rome",
                trust=Trust.SYSTEM,
                valid_from=datetime(2026, 4, 10, tzinfo=UTC),
                ends_at=datetime(2026, 4, 14, tzinfo=UTC),
            ),
        )
        context = hybrid().build(
            thread, AGENT, user_id=USER, current_input="Which hotel did Ana stay at in Rome?"
        )
    assert context.memory_context is not None
    assert (
        "From memory:\n- Ana stayed at Hotel Raphael in Rome (from 2026-04-10 to 2026-04-14)"
    ) in context.memory_context
    assert context.recalled is not None
    assert [item.value for item in context.recalled.items] == ["Hotel Raphael"]


def test_hybrid_recalls_through_the_message_index() -> None:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(CONCEPT_PROVIDER)):
        thread, rome = rome_thread()
        from cogitator_memory.threads.models import Entry

        message_index.index_entries(
            list(Entry.objects.filter(thread_id=thread).values_list("pk", flat=True))
        )
        service = ConceptEmbeddings()
        builder = hybrid(
            embedding_service=service, retriever=MemoryRetriever(embedding_service=service)
        )
        assert builder.uses_message_index()
        context = builder.build(
            thread, AGENT, user_id=USER, current_input="Which hotel in Rome did we book?"
        )
    assert context.recalled is not None
    assert rome[0] in context.recalled.entries
    assert context.errors == []
