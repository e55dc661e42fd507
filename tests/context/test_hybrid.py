"""The hybrid strategy with a retriever at the seam: the newest history kept like recent,
older turns and items recalled into the recall partition, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemKind, MemoryItem, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem
from cogitator_memory.recall.types import (
    ChannelScore,
    QueryAnalysis,
    RecallError,
    RecallHit,
    Retrieval,
)
from cogitator_memory.threads.models import Entry
from cogitator_memory.tokens import count_entry_tokens
from tests.context.support import AGENT, USER, contents, conversation, new_thread, say
from tests.search.support import ConceptEmbeddings, FailingEmbeddings

pytestmark = pytest.mark.django_db

AS_OF = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)
ANALYSIS = QueryAnalysis(search=True, kind="general", time=None, terms=("stay",))


class FakeRetriever:
    """Returns the hits it was given and records every call."""

    def __init__(self, hits: list[RecallHit] | None = None, *, fail: bool = False) -> None:
        self.hits = hits or []
        self.fail = fail
        self.calls: list[dict[str, Any]] = []
        self.errors: list[RecallError] = []

    def retrieve(self, **kwargs: Any) -> Retrieval:
        self.calls.append(kwargs)
        if self.fail:
            raise ConnectionError("the search index is down")
        held = set(kwargs["held"])
        hits = [hit for hit in self.hits if hit.id not in held]
        return Retrieval(analysis=ANALYSIS, hits=hits, errors=self.errors)


def turn_hit(entry: Entry, score: float = 1.0) -> RecallHit:
    return RecallHit(
        "entry", entry.pk, score, {"entry_keyword": ChannelScore(1, score)}, entry=entry
    )


def item_hit(item: MemoryItem, score: float = 0.5) -> RecallHit:
    return RecallHit("item", item.pk, score, {"item_keyword": ChannelScore(1, score)}, item=item)


def hybrid(
    retriever: Any, *, max_tokens: int, include_facts: bool = False, **deps: Any
) -> ContextBuilder:
    return ContextBuilder(
        ContextBuilderConfig(
            max_tokens=max_tokens,
            reserve_tokens=0,
            strategy="hybrid",
            include_facts=include_facts,
            time_zone="Europe/Lisbon",
        ),
        ContextBuilderDeps(
            retriever=retriever,
            message_index=deps.pop("message_index", False),
            clock=lambda: AS_OF,
            **deps,
        ),
    )


def write_item(
    attribute: str, value: str, *, start: datetime, end: datetime | None = None, content: str = ""
) -> MemoryItem:
    return (
        MemoryItems(clock=lambda: AS_OF)
        .write(
            MemoryScope(AGENT, user_id=USER),
            NewItem(
                kind=ItemKind.EVENT,
                subject="Ana",
                attribute=attribute,
                value=value,
                content=content or f"Ana {attribute} {value}",
                trust=Trust.SYSTEM,
                valid_from=start,
                ends_at=end,
            ),
        )
        .item
    )


def test_hybrid_keeps_the_newest_history_and_recalls_older_turns_with_their_replies() -> None:
    # given 20 turns, the first about a hotel in April
    thread = new_thread()
    april = datetime(2026, 4, 10, 18, 30, tzinfo=UTC)
    question = say(thread, "user", "Where should we stay in Rome?", created_at=april)
    reply = say(thread, "assistant", "Hotel Raphael, near Piazza Navona.", created_at=april)
    entries = conversation(thread, 20, start=datetime(2026, 5, 1, tzinfo=UTC))
    retriever = FakeRetriever([turn_hit(reply)])
    # when the budget holds four messages of history and some recall
    cost = count_entry_tokens(entries[-1])
    context = hybrid(retriever, max_tokens=cost * 12).build(
        thread, AGENT, user_id=USER, current_input="Where did we stay last April?"
    )
    # then the newest history is a run, as recent would keep it
    history = [m for m in context.messages if "memory_context" not in str(m["content"])]
    assert contents(history) == [entry.content for entry in entries[-len(history) :]]
    assert len(history) >= 4
    # and the older reply is recalled with the message it answers, dated in the zone
    assert context.memory_context == (
        "<memory_context>\nEarlier in this conversation:\n"
        "- [Fri 2026-04-10 19:30] user: Where should we stay in Rome?\n"
        "  [Fri 2026-04-10 19:30] assistant: Hotel Raphael, near Piazza Navona.\n"
        "</memory_context>"
    )
    assert context.recalled is not None
    assert context.recalled.entries == [question, reply]
    assert context.recalled.items == []
    assert question not in context.dropped.entries and reply not in context.dropped.entries
    assert context.partitions["recall"] > 0
    # and the retriever searched the older turns, not those in the history
    [call] = retriever.calls
    assert call["input"] == "Where did we stay last April?"
    assert call["anchor"] == AS_OF
    assert call["time_zone"] == "Europe/Lisbon"
    # (the history it was told is held, and which the final history keeps at least)
    kept = {m["content"] for m in history}
    everything = [question, reply, *entries]
    held = [e for e in everything if e.pk in set(call["held"])]
    assert held == everything[-len(held) :]
    assert {e.content for e in held} <= kept
    assert [e.pk for e in call["history"]] == [e.pk for e in everything[: -len(held)]]
    assert call["scope"] == MemoryScope(AGENT, USER, thread_id=thread)


def test_recalled_items_show_the_interval_they_held_when_they_no_longer_hold() -> None:
    thread = new_thread()
    say(thread, "user", "Hi")
    stay = write_item(
        "hotel",
        "Raphael",
        start=datetime(2026, 4, 10, tzinfo=UTC),
        end=datetime(2026, 4, 14, tzinfo=UTC),
        content="Ana stayed at Hotel Raphael in Rome",
    )
    plan = write_item("plan", "Lisbon", start=datetime(2026, 10, 1, tzinfo=UTC))
    retriever = FakeRetriever([item_hit(stay), item_hit(plan)])
    context = hybrid(retriever, max_tokens=2000).build(
        thread, AGENT, user_id=USER, current_input="Where did we stay last April?"
    )
    assert context.memory_context == (
        "<memory_context>\nFrom memory:\n"
        "- Ana stayed at Hotel Raphael in Rome (from 2026-04-10 to 2026-04-14)\n"
        "- Ana plan Lisbon\n"
        "</memory_context>"
    )
    assert context.recalled is not None
    assert context.recalled.items == [stay, plan]


def test_an_item_the_facts_kept_is_not_recalled_again() -> None:
    thread = new_thread()
    say(thread, "user", "Hi")
    plan = write_item("plan", "Lisbon", start=datetime(2026, 10, 1, tzinfo=UTC))
    retriever = FakeRetriever([item_hit(plan)])
    context = hybrid(retriever, max_tokens=2000, include_facts=True).build(
        thread, AGENT, user_id=USER, current_input="What is the plan?"
    )
    assert context.memory_context == (
        "<memory_context>\nKnown facts:\n- Ana plan Lisbon\n</memory_context>"
    )
    assert plan.pk in retriever.calls[0]["held"]
    assert [item.pk for item in retriever.calls[0]["items"]] == [plan.pk]
    assert context.recalled is not None and context.recalled.items == []


def test_recall_takes_no_more_than_its_share_and_the_history_the_rest() -> None:
    thread = new_thread()
    old = conversation(thread, 30, words=40)
    entries = conversation(thread, 10, start=datetime(2026, 6, 1, tzinfo=UTC))
    retriever = FakeRetriever([turn_hit(entry) for entry in old[:20:2]])
    context = hybrid(retriever, max_tokens=1000).build(
        thread, AGENT, user_id=USER, current_input="x"
    )
    # recall takes its 60 % of what the input leaves, and the 15 % the facts did not need
    # (leftovers go to facts, recall, recent in that order); the history takes the rest
    left = 1000 - context.partitions["final"]
    assert 0.6 * left < context.partitions["recall"] <= 0.75 * left
    assert context.partitions["recent"] >= 0.25 * left - 2 * count_entry_tokens(entries[-1])
    assert context.token_count <= left
    dropped_recall = [b for b in context.dropped.blocks if b.partition == "recall"]
    assert dropped_recall and {b.reason for b in dropped_recall} <= {"budget", "oversized"}
    assert context.messages[-2]["content"] == entries[-1].content


def test_without_input_hybrid_is_recent() -> None:
    thread = new_thread()
    entries = conversation(thread, 3)
    retriever = FakeRetriever()
    context = hybrid(retriever, max_tokens=1000).build(thread, AGENT)
    assert contents(context.messages) == [entry.content for entry in entries]
    assert retriever.calls == []
    assert context.recalled is not None and context.recalled.entries == []


def test_a_retriever_that_fails_leaves_recall_out_with_a_relevance_error() -> None:
    thread = new_thread()
    entries = conversation(thread, 3)
    context = hybrid(FakeRetriever(fail=True), max_tokens=1000).build(
        thread, AGENT, current_input="Where did we stay?"
    )
    assert contents(context.messages) == [entry.content for entry in entries]
    assert [(e.source, e.message) for e in context.errors] == [
        ("relevance", "ConnectionError: the search index is down")
    ]


def test_the_retrievers_own_errors_are_reported() -> None:
    thread = new_thread()
    conversation(thread, 2)
    retriever = FakeRetriever()
    retriever.errors = [RecallError("relevance", "reranker failed: 429")]
    context = hybrid(retriever, max_tokens=1000).build(thread, AGENT, current_input="Rome?")
    assert [(e.source, e.message) for e in context.errors] == [
        ("relevance", "reranker failed: 429")
    ]


def test_without_the_index_older_turns_are_scored_once_and_a_failure_recalls_without_vectors() -> (
    None
):
    thread = new_thread()
    older = conversation(thread, 5)
    conversation(thread, 20, start=datetime(2026, 6, 1, tzinfo=UTC))
    service = ConceptEmbeddings()
    retriever = FakeRetriever()
    builder = hybrid(retriever, max_tokens=300, embedding_service=service)
    builder.build(thread, AGENT, current_input="question 1")
    cosines = retriever.calls[0]["cosines"]
    assert set(older_ids := [e.pk for e in older]) <= set(cosines)
    embedded = len(service.calls)
    builder.build(thread, AGENT, current_input="question 1")
    assert len(service.calls) == embedded  # nothing embedded twice
    assert older_ids
    # a failing provider: recall runs without vectors, and says why
    retriever = FakeRetriever()
    context = hybrid(retriever, max_tokens=300, embedding_service=FailingEmbeddings()).build(
        thread, AGENT, current_input="question 1"
    )
    assert retriever.calls[0]["cosines"] == {}
    assert [e.source for e in context.errors] == ["relevance"]


def test_with_the_message_index_the_retriever_searches_the_thread_before_the_history() -> None:
    thread = new_thread()
    conversation(thread, 30)
    retriever = FakeRetriever()
    context = hybrid(retriever, max_tokens=300, message_index=True).build(
        thread, AGENT, current_input="question 1"
    )
    [call] = retriever.calls
    held = Entry.objects.filter(pk__in=call["held"])
    assert call["thread_id"] == thread
    assert call["before_seq"] == min(entry.seq for entry in held)
    assert "history" not in call and call["cosines"] is None
    assert context.messages


def test_a_recalled_turn_the_history_holds_after_all_is_a_duplicate() -> None:
    thread = new_thread()
    entries = conversation(thread, 3)
    # the history holds everything; a retriever that returns a held turn anyway
    retriever = FakeRetriever([turn_hit(entries[-1])])
    retriever.retrieve = lambda **kwargs: Retrieval(ANALYSIS, [turn_hit(entries[0])])  # type: ignore[method-assign]
    context = hybrid(retriever, max_tokens=2000).build(thread, AGENT, current_input="q")
    assert contents(context.messages) == [entry.content for entry in entries]
    assert context.memory_context is None
    assert context.recalled is not None and context.recalled.entries == []


def test_recalled_items_are_counted_as_retrieved_in_the_background(
    django_capture_on_commit_callbacks: Any,
) -> None:
    thread = new_thread()
    say(thread, "user", "Hi")
    stay = write_item("hotel", "Raphael", start=datetime(2026, 4, 10, tzinfo=UTC))
    with django_capture_on_commit_callbacks(execute=True):
        hybrid(FakeRetriever([item_hit(stay)]), max_tokens=2000).build(
            thread, AGENT, user_id=USER, current_input="Which hotel?"
        )
    stay.refresh_from_db()
    assert stay.times_retrieved == 1
    assert stay.last_retrieved_at == AS_OF


def test_a_branch_longer_than_the_whole_read_is_searched_in_the_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cogitator_memory.context import build_run

    monkeypatch.setattr(build_run, "HYBRID_WHOLE_HISTORY", 10)
    monkeypatch.setattr(build_run, "HISTORY_READ_FLOOR", 10)
    monkeypatch.setattr(build_run, "SCORED_ENTRIES", 5)
    thread = new_thread()
    entries = conversation(thread, 60, start=datetime(2026, 5, 1, tzinfo=UTC))
    retriever = FakeRetriever()
    cost = count_entry_tokens(entries[-1])
    hybrid(retriever, max_tokens=cost * 12).build(
        thread, AGENT, user_id=USER, current_input="What did we say about the hotel?"
    )
    [call] = retriever.calls
    # not read whole: the retriever searches the thread before the oldest turn held
    assert "history" not in call
    assert call["thread_id"] == thread
    held = [entry for entry in entries if entry.pk in set(call["held"])]
    assert held and call["before_seq"] == held[0].seq
    assert call["leaf_id"] is None
