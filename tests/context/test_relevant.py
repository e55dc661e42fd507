"""The relevant strategy, search results, and parts that fail to load, on both databases."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError
from django.test import override_settings

from cogitator_memory.context import build_run
from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
from cogitator_memory.embeddings import message_index
from cogitator_memory.embeddings.stores.exact import ExactEmbeddingStore
from cogitator_memory.exceptions import EmbeddingsNotConfigured
from cogitator_memory.tokens import count_entry_tokens, count_tokens
from tests.context.support import AGENT, contents, new_thread, say
from tests.search.support import (
    CONCEPT_PROVIDER,
    ConceptEmbeddings,
    FailingEmbeddings,
    embeddings_settings,
    write_text,
)

pytestmark = pytest.mark.django_db

TOPICS = [
    ("user", "Puppy adopted!"),
    ("assistant", "Dogs, lovely."),
    ("user", "Car broke."),
    ("assistant", "Mechanic, automobile."),
    ("user", "Dinner ideas?"),
    ("assistant", "Pasta, a meal."),
    ("user", "Thanks!"),
    ("assistant", "Bye."),
]
INPUT = "vehicle repair"


def topics(thread: str) -> list[Any]:
    return [say(thread, role, text) for role, text in TOPICS]


def relevant(service: Any = None, *, max_tokens: int = 40, **deps: Any) -> ContextBuilder:
    return ContextBuilder(
        ContextBuilderConfig(max_tokens=max_tokens, reserve_tokens=0, strategy="relevant"),
        ContextBuilderDeps(
            embedding_service=service or ConceptEmbeddings(), message_index=False, **deps
        ),
    )


def test_relevant_without_an_embedding_service_is_built_as_recent_and_says_so() -> None:
    # given a conversation and no embedding service configured
    thread = new_thread()
    entries = topics(thread)
    room = count_entry_tokens(entries[-1]) + count_entry_tokens(entries[-2]) + count_tokens(INPUT)
    with override_settings(COGITATOR_MEMORY=embeddings_settings(None)):
        builder = ContextBuilder(
            ContextBuilderConfig(max_tokens=room, reserve_tokens=0, strategy="relevant")
        )
        # when
        context = builder.build(thread, AGENT, current_input=INPUT)
        recent = ContextBuilder(
            ContextBuilderConfig(max_tokens=room, reserve_tokens=0, strategy="recent")
        ).build(thread, AGENT, current_input=INPUT)
    # then the context recent builds, and one relevance error naming what is missing
    assert contents(context.messages) == [entries[-2].content, entries[-1].content]
    assert context.messages == recent.messages
    assert context.dropped.entries == recent.dropped.entries
    assert [error.source for error in context.errors] == ["relevance"]
    assert context.errors[0].message.startswith("EmbeddingsNotConfigured: the relevant strategy")
    assert isinstance(context.errors[0].error, EmbeddingsNotConfigured)


def test_relevant_without_a_service_or_an_input_is_recent_without_an_error() -> None:
    thread = new_thread()
    entries = topics(thread)
    with override_settings(COGITATOR_MEMORY=embeddings_settings(None)):
        context = ContextBuilder(
            ContextBuilderConfig(max_tokens=1000, reserve_tokens=0, strategy="relevant")
        ).build(thread, AGENT)
    assert contents(context.messages) == [entry.content for entry in entries]
    assert context.errors == []


def test_relevant_keeps_the_most_similar_entries_in_conversation_order() -> None:
    thread = new_thread()
    entries = topics(thread)
    car, mechanic = entries[2], entries[3]
    room = count_entry_tokens(car) + count_entry_tokens(mechanic) + count_tokens(INPUT)
    context = relevant(max_tokens=room).build(thread, AGENT, current_input=INPUT)
    assert contents(context.messages) == [car.content, mechanic.content]
    assert context.dropped.entries == [e for e in entries if e not in (car, mechanic)]
    assert {b.reason for b in context.dropped.blocks} == {"budget"}
    assert context.errors == []


def test_relevant_falls_back_to_recent_without_input() -> None:
    thread = new_thread()
    entries = topics(thread)
    room = count_entry_tokens(entries[-1]) + count_entry_tokens(entries[-2])
    context = relevant(max_tokens=room).build(thread, AGENT)
    assert contents(context.messages) == [entries[-2].content, entries[-1].content]


def test_without_the_index_each_entry_is_embedded_once_per_builder() -> None:
    thread = new_thread()
    topics(thread)
    service = ConceptEmbeddings()
    builder = relevant(service)
    builder.build(thread, AGENT, current_input=INPUT)
    assert [len(call) for call in service.calls] == [1, 8]  # the input, then the entries
    # when the same turn is built again, nothing is embedded
    builder.build(thread, AGENT, current_input=INPUT)
    assert len(service.calls) == 2
    # and a new entry and a new input are embedded, nothing else
    say(thread, "user", "The dog is sick, find a doctor")
    builder.build(thread, AGENT, current_input="a physician for the hound")
    assert service.calls[2:] == [["a physician for the hound"], ["The dog is sick, find a doctor"]]


def test_without_the_index_only_the_newest_200_entries_are_scored() -> None:
    thread = new_thread()
    oldest = say(thread, "user", "My car broke down")
    for number in range(200):
        say(thread, "user" if number % 2 else "assistant", f"note {number}")
    context = relevant(max_tokens=10_000).build(thread, AGENT, current_input="car repair")
    assert oldest not in [m.get("content") for m in context.messages]
    assert context.messages[0]["content"] == "note 0"
    assert context.dropped.entries == [oldest]
    [not_selected] = [b for b in context.dropped.blocks if b.reason == "not-selected"]
    assert not_selected.source_id == oldest.pk


def test_with_the_message_index_the_store_is_searched_for_the_thread() -> None:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(CONCEPT_PROVIDER)):
        thread = new_thread()
        entries = topics(thread)
        other = new_thread("bob-1", user="bob")
        say(other, "user", "Car broke, mechanic repair.")
        message_index.index_entries([entry.pk for entry in entries])
        service = ConceptEmbeddings()
        room = sum(count_entry_tokens(entry) for entry in entries[2:4]) + count_tokens(INPUT)
        builder = ContextBuilder(
            ContextBuilderConfig(max_tokens=room, reserve_tokens=0, strategy="relevant"),
            ContextBuilderDeps(embedding_service=service),
        )
        assert builder.uses_message_index()
        context = builder.build(thread, AGENT, current_input=INPUT)
    assert contents(context.messages) == [entries[2].content, entries[3].content]
    assert service.calls == [[INPUT]]  # the entries were not embedded


def test_a_failed_relevance_scoring_falls_back_to_recent() -> None:
    thread = new_thread()
    entries = topics(thread)
    room = count_entry_tokens(entries[-1]) + count_entry_tokens(entries[-2]) + count_tokens(INPUT)
    context = relevant(FailingEmbeddings(), max_tokens=room).build(
        thread, AGENT, current_input=INPUT
    )
    assert contents(context.messages) == [entries[-2].content, entries[-1].content]
    [error] = context.errors
    assert error.source == "relevance"
    assert error.message == (
        "EmbeddingServiceError: failing embeddings failed (HTTP 503): service unavailable"
    )


def test_a_vector_size_mismatch_in_the_index_falls_back_to_recent() -> None:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(CONCEPT_PROVIDER)):
        thread = new_thread()
        entries = topics(thread)
        message_index.index_entries([entry.pk for entry in entries])
        builder = ContextBuilder(
            ContextBuilderConfig(max_tokens=40, reserve_tokens=0, strategy="relevant"),
            ContextBuilderDeps(embedding_service=ConceptEmbeddings(dimensions=32)),
        )
        context = builder.build(thread, AGENT, current_input=INPUT)
    assert [error.source for error in context.errors] == ["relevance"]
    assert "32 dimensions" in context.errors[0].message
    assert context.messages[-1]["content"] == entries[-1].content


def test_a_history_that_fails_to_load_is_reported_and_the_rest_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread = new_thread()
    topics(thread)

    def down(*args: Any, **kwargs: Any) -> list[Any]:
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(build_run, "read_history", down)
    context = relevant().build(thread, AGENT, system_prompt="Hi.", current_input="car")
    assert context.messages == [{"role": "system", "content": "Hi."}]
    assert [(e.source, e.message) for e in context.errors] == [
        ("history", "OperationalError: could not connect to server")
    ]


def test_search_results_go_into_relevant_context() -> None:
    thread = new_thread()
    write_text("doc-1", "Our garage can repair any automobile", agent=AGENT)
    write_text("doc-2", "The office dog is called Rex", agent=AGENT)
    write_text("doc-3", "Secret car notes of another agent", agent="other")
    config = ContextBuilderConfig(max_tokens=1000, include_semantic_context=True)
    deps = ContextBuilderDeps(embedding_service=ConceptEmbeddings(), store=ExactEmbeddingStore())
    context = ContextBuilder(config, deps).build(
        thread, AGENT, current_input="Where can the car be fixed?"
    )
    assert context.semantic_results[0].embedding.source_id == "doc-1"
    assert "doc-3" not in [hit.embedding.source_id for hit in context.semantic_results]
    assert context.memory_context is not None
    assert context.memory_context.startswith(
        "<memory_context>\nRelevant context:\n- Our garage can repair any automobile\n"
    )
    assert context.metadata.semantic_results_included == len(context.semantic_results)
    assert context.partitions["recall"] > 0


def test_search_results_that_fail_are_reported_under_semantic() -> None:
    thread = new_thread()
    say(thread, "user", "hello")
    config = ContextBuilderConfig(max_tokens=1000, include_semantic_context=True)
    deps = ContextBuilderDeps(embedding_service=FailingEmbeddings())
    context = ContextBuilder(config, deps).build(thread, AGENT, current_input="car?")
    assert contents(context.messages) == ["hello"]
    assert [e.source for e in context.errors] == ["semantic"]
    assert context.semantic_results == []


def test_with_the_message_index_entries_not_indexed_yet_are_embedded_here() -> None:
    with override_settings(COGITATOR_MEMORY=embeddings_settings(CONCEPT_PROVIDER)):
        thread = new_thread()
        entries = topics(thread)
        message_index.index_entries([entry.pk for entry in entries])
        newest = say(thread, "user", "Vehicle repair.")
        service = ConceptEmbeddings()
        # room for the three entries about a car repair, which embed alike
        matches = [entries[2], entries[3], newest]
        room = sum(count_entry_tokens(entry) for entry in matches) + count_tokens(INPUT)
        builder = ContextBuilder(
            ContextBuilderConfig(max_tokens=room, reserve_tokens=0, strategy="relevant"),
            ContextBuilderDeps(embedding_service=service),
        )
        context = builder.build(thread, AGENT, current_input=INPUT)
    assert contents(context.messages) == [entry.content for entry in matches]
    assert service.calls == [[INPUT], [newest.content]]
