"""A built context never exceeds ``max_tokens - reserve_tokens``, the system prompt aside,
over random threads, budgets and partition shares (hypothesis)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
from cogitator_memory.recall.types import QueryAnalysis, RecallHit, Retrieval
from cogitator_memory.threads import services
from cogitator_memory.tokens import count_messages_tokens
from tests.context.support import AGENT, new_thread
from tests.search.support import ConceptEmbeddings

pytestmark = pytest.mark.django_db

_threads = itertools.count()
WORDS = ["car", "dog", "dinner", "repair", "trip", "note", "Lisbon", "invoice", "x"]


def text(words: int, seed: int) -> str:
    return " ".join(WORDS[(seed + n) % len(WORDS)] for n in range(words))


entry_kinds = st.tuples(
    st.sampled_from(["user", "assistant", "tool", "call", "image"]),
    st.integers(min_value=0, max_value=400),
)
shares = st.one_of(st.none(), st.floats(min_value=0, max_value=0.5))


class EveryTurn:
    """A retriever that recalls every older turn it is given, oldest first."""

    def retrieve(self, **kwargs: Any) -> Retrieval:
        hits = [
            RecallHit("entry", entry.pk, 1.0, {}, entry=entry)
            for entry in kwargs.get("history", ())
        ]
        return Retrieval(QueryAnalysis(True, "general", None, ()), hits)


def write(thread: str, kinds: list[tuple[str, int]]) -> None:
    for number, (kind, words) in enumerate(kinds):
        body = text(words, number) or "ok"
        if kind == "tool":
            services.add_entry(
                thread, type="tool_result", content=body, tool_call_id=f"c{number}", name="tool"
            )
        elif kind == "call":
            services.add_entry(
                thread,
                role="assistant",
                tool_calls=[{"id": f"c{number}", "name": "tool", "arguments": {"q": body}}],
            )
        elif kind == "image":
            services.add_entry(
                thread,
                role="user",
                content=[
                    {"type": "text", "text": body},
                    {"type": "image_url", "image_url": {"url": "https://x/i.png"}},
                ],
            )
        else:
            services.add_entry(thread, role=kind, content=body)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kinds=st.lists(entry_kinds, max_size=25),
    max_tokens=st.integers(min_value=1, max_value=4000),
    reserve=st.one_of(st.none(), st.integers(min_value=0, max_value=600)),
    facts_share=shares,
    recall_share=shares,
    strategy=st.sampled_from(["recent", "relevant", "hybrid"]),
    system_words=st.integers(min_value=0, max_value=300),
    pinned_words=st.lists(st.integers(min_value=1, max_value=200), max_size=3),
    brief_words=st.integers(min_value=0, max_value=200),
    input_words=st.integers(min_value=0, max_value=200),
    semantic=st.booleans(),
)
def test_a_built_context_never_exceeds_its_budget(
    kinds: list[tuple[str, int]],
    max_tokens: int,
    reserve: int | None,
    facts_share: float | None,
    recall_share: float | None,
    strategy: str,
    system_words: int,
    pinned_words: list[int],
    brief_words: int,
    input_words: int,
    semantic: bool,
) -> None:
    thread = new_thread(f"prop-{next(_threads)}")
    write(thread, kinds)
    partitions: dict[str, Any] = {}
    if facts_share is not None:
        partitions["facts"] = {"share": facts_share}
    if recall_share is not None:
        partitions["recall"] = {"share": recall_share}
    elif strategy == "hybrid" and facts_share is not None and facts_share > 0.4:
        partitions["recall"] = {"share": 1 - facts_share}
    config = ContextBuilderConfig(
        max_tokens=max_tokens,
        reserve_tokens=reserve,
        strategy=strategy,  # type: ignore[arg-type]
        partitions=partitions,
        include_semantic_context=semantic,
    )
    deps = ContextBuilderDeps(
        embedding_service=ConceptEmbeddings(), message_index=False, retriever=EveryTurn()
    )
    context = ContextBuilder(config, deps).build(
        thread,
        AGENT,
        system_prompt=text(system_words, 1) or None,
        pinned=[text(words, 2) for words in pinned_words],
        brief=text(brief_words, 3) or None,
        current_input=text(input_words, 4) or None,
    )
    reserve_used = reserve if reserve is not None else max(100, -(-max_tokens // 10))
    room = max(0, max_tokens - reserve_used)
    system = context.partitions.get("system", 0)
    final = context.partitions.get("final", 0)
    # the context without the system prompt fits what the prompt and the input leave
    assert context.token_count - system <= max(0, room - system - final)
    assert context.token_count == sum(context.partitions.values()) - final
    # and what is sent costs no more than what was counted
    assert count_messages_tokens(context.messages) <= context.token_count
    assert context.errors == []
