"""``ContextBuilder``: budgets, the recent strategy, the fixed partitions, message order
and cache breakpoints, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cogitator_memory.context.build_run import HISTORY_READ_FLOOR
from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import ContextBuilderConfig
from cogitator_memory.context.seams import GraphContext, GraphLine
from cogitator_memory.exceptions import (
    EntryNotInThread,
    InvalidContextConfig,
    InvalidInput,
    ThreadNotFound,
)
from cogitator_memory.grants import Grants
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Thread
from cogitator_memory.tokens import count_entry_tokens
from tests.context.support import AGENT, contents, conversation, new_thread, say
from tests.factories import create_branch

pytestmark = pytest.mark.django_db


def builder(**config: object) -> ContextBuilder:
    return ContextBuilder(ContextBuilderConfig(**config))  # type: ignore[arg-type]


# --- budgets and arguments -------------------------------------------------------------


def test_a_build_without_a_budget_from_either_side_is_refused() -> None:
    thread = new_thread()
    with pytest.raises(InvalidContextConfig) as caught:
        builder().build(thread, AGENT)
    assert isinstance(caught.value, InvalidInput)
    assert caught.value.errors == {
        "max_tokens": ["No budget: give max_tokens to the config or to build()."]
    }
    # and the budget of build() serves a builder without one
    context = builder().build(thread, AGENT, max_tokens=1000, system_prompt="Hi.")
    assert context.partitions == {"system": 5}


def test_bad_arguments_raise_typed_errors() -> None:
    thread = new_thread()
    with pytest.raises(InvalidContextConfig, match="max_tokens: A number of tokens"):
        builder(max_tokens=-5)
    with pytest.raises(InvalidContextConfig, match="reserve_tokens: A number of tokens"):
        builder(max_tokens=100).build(thread, AGENT, reserve_tokens=-1)
    with pytest.raises(InvalidContextConfig, match="Unknown strategy 'newest'"):
        builder(max_tokens=100, strategy="newest")
    with pytest.raises(InvalidContextConfig, match="Unknown time zone 'Mars/Olympus'"):
        builder(max_tokens=100, time_zone="Mars/Olympus")
    with pytest.raises(InvalidContextConfig, match="time_zone: Unknown time zone"):
        builder(max_tokens=100).build(thread, AGENT, time_zone="Europe/Nowhere")
    with pytest.raises(InvalidContextConfig, match="as_of: An aware datetime"):
        builder(max_tokens=100).build(thread, AGENT, as_of=datetime(2026, 1, 1))
    with pytest.raises(InvalidContextConfig, match="The shares of the partitions"):
        builder(max_tokens=100, partitions={"facts": {"share": 0.9}, "recall": {"share": 0.2}})


def test_the_reserve_is_ten_percent_of_the_budget_and_at_least_100_tokens() -> None:
    thread = new_thread()
    entries = conversation(thread, 200, words=8)
    # a run starts at a user's message: up to a turn (two messages) less than the room
    per_turn = count_entry_tokens(entries[-1]) + count_entry_tokens(entries[-2])
    # 10 % of 4000 is 400: 3600 tokens of history
    context = builder(max_tokens=4000).build(thread, AGENT)
    assert 3600 - per_turn < context.token_count <= 3600
    # 10 % of 500 is 50, the reserve is 100: 400 tokens
    context = builder().build(thread, AGENT, max_tokens=500)
    assert 400 - per_turn < context.token_count <= 400
    # an explicit reserve, from the config or from build()
    context = builder(max_tokens=500, reserve_tokens=0).build(thread, AGENT)
    assert 500 - per_turn < context.token_count <= 500
    context = builder(max_tokens=500, reserve_tokens=0).build(thread, AGENT, reserve_tokens=300)
    assert context.token_count <= 200


def test_a_thread_the_caller_may_not_see_is_not_found() -> None:
    thread = new_thread(user="ana")
    other = Grants.for_agents([AGENT], {AGENT: ["bob"]})
    with pytest.raises(ThreadNotFound):
        builder(max_tokens=1000).build(thread, AGENT, grants=other)
    with pytest.raises(ThreadNotFound):
        builder(max_tokens=1000).build("nope", AGENT)
    mine = Grants.for_agents([AGENT], {AGENT: ["ana"]})
    assert builder(max_tokens=1000).build(thread, AGENT, grants=mine).errors == []


# --- the recent strategy ---------------------------------------------------------------


def test_recent_keeps_the_newest_messages_as_one_run_in_conversation_order() -> None:
    # given 10 turns of 20 messages, each message 8 words
    thread = new_thread()
    entries = conversation(thread, 10)
    cost = count_entry_tokens(entries[0])
    # when the budget holds six messages
    context = builder(max_tokens=cost * 6, reserve_tokens=0).build(thread, AGENT)
    # then the newest six go, oldest first, as three whole turns
    assert contents(context.messages) == [entry.content for entry in entries[-6:]]
    assert context.partitions == {"recent": cost * 6}
    assert context.token_count == cost * 6
    assert context.truncated is True
    assert context.dropped.entries == entries[:-6]
    assert [block.source_id for block in context.dropped.blocks] == [
        entry.pk for entry in reversed(entries[:-6])
    ]
    assert {block.reason for block in context.dropped.blocks} == {"budget"}
    assert context.dropped.token_count == sum(count_entry_tokens(e) for e in entries[:-6])
    assert context.metadata.original_message_count == 20
    assert context.metadata.included_message_count == 6
    assert context.memory_context is None


def test_a_message_that_does_not_fit_ends_the_run_even_if_older_ones_would() -> None:
    thread = new_thread()
    old = say(thread, "user", "hi")
    reply = say(thread, "assistant", "hello")
    big = say(thread, "assistant", "long " * 400)
    newest = say(thread, "user", "short question")
    context = builder(max_tokens=100, reserve_tokens=0).build(thread, AGENT)
    assert contents(context.messages) == [newest.content]
    assert context.dropped.entries == [old, reply, big]
    reasons = {block.source_id: block.reason for block in context.dropped.blocks}
    assert reasons == {big.pk: "oversized", reply.pk: "budget", old.pk: "budget"}


def test_a_long_thread_is_read_only_as_far_as_the_budget_reaches(
    django_assert_max_num_queries: Any,
) -> None:
    thread = new_thread()
    create_branch(Thread.objects.get(pk=thread), 5000)
    with django_assert_max_num_queries(10):
        context = builder(max_tokens=300, reserve_tokens=0).build(thread, AGENT)
    # the newest HISTORY_READ_FLOOR are read, past what the budget holds, no more
    assert context.metadata.original_message_count == HISTORY_READ_FLOOR
    assert (
        len(context.dropped.entries) == HISTORY_READ_FLOOR - context.metadata.included_message_count
    )
    assert context.truncated is True
    assert 0 < context.token_count <= 300


def test_a_reply_never_appears_without_the_message_it_answers() -> None:
    thread = new_thread()
    say(thread, "user", "question one")
    say(thread, "assistant", "answer one")
    question = say(thread, "user", "question two " + "word " * 60)
    answer = say(thread, "assistant", "answer two")
    # room for the answer, not for its question
    room = count_entry_tokens(answer) + count_entry_tokens(question) - 1
    context = builder(max_tokens=room, reserve_tokens=0).build(thread, AGENT)
    assert context.messages == []
    assert context.dropped.entries[-1] == answer
    assert "recent" not in context.partitions
    # with room for both, the turn goes whole
    room += 1
    context = builder(max_tokens=room, reserve_tokens=0).build(thread, AGENT)
    assert contents(context.messages) == [question.content, answer.content]


def test_a_tool_result_too_large_becomes_a_note_and_the_run_goes_on() -> None:
    thread = new_thread()
    question = say(thread, "user", "What is in the report?")
    call = say(
        thread,
        "assistant",
        None,
        tool_calls=[{"id": "call_1", "name": "read_report", "arguments": {"path": "/r.txt"}}],
    )
    result = services.add_entry(
        thread,
        type="tool_result",
        content="data " * 2000,
        tool_call_id="call_1",
        name="read_report",
    )
    answer = say(thread, "assistant", "The report is about data.")
    context = builder(max_tokens=200, reserve_tokens=0).build(thread, AGENT)
    assert len(context.messages) == 4
    first, second, note, last = context.messages
    assert first["content"] == question.content
    assert second["tool_calls"] == call.tool_calls
    assert note == {
        "role": "tool",
        "content": f"[The result of read_report ({count_entry_tokens(result)} tokens) was left "
        "out to fit the context.]",
        "tool_call_id": "call_1",
    }
    assert last["content"] == answer.content
    assert context.truncated is True
    assert [(b.source_id, b.reason) for b in context.dropped.blocks] == [(result.pk, "oversized")]
    assert context.dropped.entries == []


def test_entries_are_counted_by_text_tool_call_arguments_and_images() -> None:
    thread = new_thread()
    image = say(
        thread,
        "user",
        [
            {"type": "text", "text": "What is this?"},
            {
                "type": "image_url",
                "image_url": {"url": "https://x/y.png", "width": 1024, "height": 1024},
            },
        ],
        token_count=1,
    )
    call = say(
        thread,
        "assistant",
        None,
        tool_calls=[{"id": "c", "name": "lookup", "arguments": {"query": "word " * 100}}],
        token_count=1,
    )
    context = builder(max_tokens=10_000, reserve_tokens=0).build(thread, AGENT)
    assert context.partitions["recent"] == count_entry_tokens(image) + count_entry_tokens(call)
    assert count_entry_tokens(image) > 700  # the image's tiles, not the saved 1
    assert count_entry_tokens(call) > 100  # the arguments
    assert context.messages[0]["content"][1]["type"] == "image_url"


def test_history_is_read_through_the_newest_compaction_and_its_summary_is_a_partition() -> None:
    thread = new_thread()
    entries = conversation(thread, 4)
    compaction = services.add_entry(
        thread,
        type="compaction",
        event={
            "strategy": "summary",
            "summary": "They talked about four things.",
            "first_kept_entry_id": entries[6].pk,
            "covered_to_entry_id": entries[5].pk,
        },
    )
    later = say(thread, "user", "And now?")
    context = builder(max_tokens=5000, reserve_tokens=0).build(thread, AGENT)
    assert contents(context.messages) == [
        "Summary of the conversation so far:\nThey talked about four things.",
        entries[6].content,
        entries[7].content,
        later.content,
    ]
    assert context.messages[0]["role"] == "user"
    assert context.partitions["summaries"] > 0
    assert context.metadata.original_message_count == 3
    assert compaction.pk not in [block.source_id for block in context.dropped.blocks]


def test_leaf_id_builds_another_branch() -> None:
    thread = new_thread()
    first = say(thread, "user", "root question")
    say(thread, "assistant", "main answer")
    other = services.add_entry(
        thread, role="assistant", content="other answer", parent_id=first.pk, activate=False
    )
    context = builder(max_tokens=1000).build(thread, AGENT, leaf_id=other.pk)
    assert contents(context.messages) == ["root question", "other answer"]
    with pytest.raises(EntryNotInThread):
        builder(max_tokens=1000).build(thread, AGENT, leaf_id="entry_missing")


# --- message order and the fixed partitions ---------------------------------------------


def test_messages_are_ordered_for_the_prompt_cache() -> None:
    thread = new_thread()
    entries = conversation(thread, 3)
    context = builder(max_tokens=5000).build(
        thread,
        AGENT,
        system_prompt="You are a helpful assistant.",
        pinned=["The user is on the Pro plan."],
        index="Memory files: /memories/user.md",
        brief="Current date and time: Wednesday, October 21, 2026, 17:20.",
        current_input="What changed since yesterday?",
    )
    system, *history, turn = context.messages
    assert system == {
        "role": "system",
        "content": "You are a helpful assistant.\n\nThe user is on the Pro plan.\n\n"
        "Memory files: /memories/user.md",
    }
    assert [message["content"] for message in history] == [entry.content for entry in entries]
    # the last message and the last message of the turn before carry a breakpoint
    assert [message.get("cache_breakpoint", False) for message in history] == [
        False,
        False,
        False,
        True,
        False,
        True,
    ]
    assert turn == {
        "role": "user",
        "content": "<memory_context>\nCurrent date and time: Wednesday, October 21, 2026, "
        "17:20.\n</memory_context>",
    }
    assert context.memory_context == turn["content"]
    assert set(context.partitions) == {"system", "final", "pinned", "index", "brief", "recent"}
    assert context.partitions["final"] == 8
    assert context.token_count == sum(context.partitions.values()) - 8
    # the input is counted, not sent
    assert "What changed" not in str(context.messages)


def test_a_system_prompt_over_budget_is_sent_whole_with_a_warning() -> None:
    thread = new_thread()
    conversation(thread, 2)
    prompt = "Be careful. " * 200
    context = builder(max_tokens=300, reserve_tokens=0).build(thread, AGENT, system_prompt=prompt)
    assert context.messages == [{"role": "system", "content": prompt}]
    assert context.partitions == {"system": 604}
    assert context.warnings == [
        "The system prompt takes 604 tokens, more than the 300 the budget leaves "
        "(max_tokens - reserve_tokens); it is sent whole."
    ]
    assert context.truncated is True
    # and include_system_prompt=False leaves it out
    context = builder(max_tokens=300, include_system_prompt=False).build(
        thread, AGENT, system_prompt=prompt
    )
    assert "system" not in context.partitions


def test_required_partitions_past_the_budget_are_dropped_with_their_reason() -> None:
    thread = new_thread()
    context = builder(max_tokens=60, reserve_tokens=0).build(
        thread, AGENT, pinned=["short pin", "x" * 400], brief="A brief that is long " * 12
    )
    dropped = {block.source_id: block.reason for block in context.dropped.blocks}
    assert dropped == {"pinned:1": "oversized", "brief": "oversized"}
    assert context.messages == [{"role": "system", "content": "short pin"}]


def test_graph_context_comes_from_the_graph_seam_only() -> None:
    class Graph:
        def graph_context(self, **kwargs: object) -> GraphContext:
            return GraphContext(
                nodes=[GraphLine("n1", "Ana (person)"), GraphLine("n2", "Lisbon (city)")],
                edges=[GraphLine("e1", "Ana lives in Lisbon")],
            )

    from cogitator_memory.context.config import ContextBuilderDeps

    thread = new_thread()
    config = ContextBuilderConfig(max_tokens=1000, include_graph_context=True)
    context = ContextBuilder(config, ContextBuilderDeps(graph=Graph())).build(
        thread, AGENT, current_input="Where does Ana live?"
    )
    assert context.memory_context == (
        "<memory_context>\nGraph context:\n- Ana (person)\n- Lisbon (city)\n"
        "- Ana lives in Lisbon\n</memory_context>"
    )
    assert context.metadata.graph_nodes_included == 2
    assert context.metadata.graph_edges_included == 1
    # without the dependency there is no graph context, and no error
    context = ContextBuilder(config).build(thread, AGENT, current_input="Where?")
    assert context.memory_context is None and context.errors == []


def test_as_of_defaults_to_the_clock() -> None:
    from cogitator_memory.context.config import ContextBuilderDeps

    moment = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)
    thread = new_thread()
    deps = ContextBuilderDeps(clock=lambda: moment)
    context = ContextBuilder(ContextBuilderConfig(max_tokens=100), deps).build(thread, AGENT)
    assert context.errors == []


def test_a_graph_that_fails_is_reported_under_graph() -> None:
    from cogitator_memory.context.config import ContextBuilderDeps

    class Down:
        def graph_context(self, **kwargs: object) -> GraphContext:
            raise TimeoutError("graph store timed out")

    thread = new_thread()
    say(thread, "user", "hello")
    config = ContextBuilderConfig(max_tokens=1000, include_graph_context=True)
    context = ContextBuilder(config, ContextBuilderDeps(graph=Down())).build(
        thread, AGENT, current_input="Where?"
    )
    assert contents(context.messages) == ["hello"]
    assert [(e.source, e.message) for e in context.errors] == [
        ("graph", "TimeoutError: graph store timed out")
    ]
    assert context.graph_context is None


def test_the_summary_alone_carries_the_breakpoint_when_no_history_fits() -> None:
    thread = new_thread()
    first = say(thread, "user", "old question")
    services.add_entry(
        thread,
        type="compaction",
        event={"strategy": "summary", "summary": "They met.", "first_kept_entry_id": None},
    )
    say(thread, "user", "new question " + "word " * 100)
    context = builder(max_tokens=40, reserve_tokens=0).build(thread, AGENT)
    assert context.messages == [
        {
            "role": "user",
            "content": "Summary of the conversation so far:\nThey met.",
            "cache_breakpoint": True,
        }
    ]
    assert first not in context.dropped.entries
