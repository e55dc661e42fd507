"""Facts from memory items and observations in a built context, on both databases."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError

from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
from cogitator_memory.context.facts import one_state_per_slot
from cogitator_memory.context.seams import Observation
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import ItemKind, MemoryItem, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem
from tests.context.support import AGENT, USER, new_thread, say

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def items(clock: Clock) -> MemoryItems:
    return MemoryItems(clock=clock)


def state(
    items: MemoryItems,
    attribute: str,
    value: str,
    *,
    at: datetime,
    kind: str = ItemKind.FACT,
    scope: MemoryScope | None = None,
    subject: str = "Ana",
    content: str | None = None,
) -> MemoryItem:
    return items.write(
        scope or MemoryScope(AGENT, user_id=USER),
        NewItem(
            kind=kind,
            subject=subject,
            attribute=attribute,
            value=value,
            content=content if content is not None else f"{subject} {attribute} {value}",
            trust=Trust.SYSTEM,
            valid_from=at,
        ),
    ).item


def facts_builder(items: MemoryItems, clock: Clock, **deps: Any) -> ContextBuilder:
    return ContextBuilder(
        ContextBuilderConfig(max_tokens=2000, include_facts=True),
        ContextBuilderDeps(memory_items=items, clock=clock, **deps),
    )


def test_facts_hold_one_state_per_slot_instructions_and_preferences_first(
    items: MemoryItems, clock: Clock
) -> None:
    # given facts, a preference, an instruction and a slot that changed
    state(items, "home", "Porto", at=T0 - timedelta(days=30))
    state(items, "home", "Lisbon", at=T0 - timedelta(days=2))
    state(items, "diet", "vegan", at=T0 - timedelta(days=10), kind=ItemKind.PREFERENCE)
    state(items, "tone", "short answers", at=T0 - timedelta(days=20), kind=ItemKind.INSTRUCTION)
    state(items, "job", "architect", at=T0 - timedelta(days=1))
    thread = new_thread()
    # when
    context = facts_builder(items, clock).build(thread, AGENT, user_id=USER)
    # then
    assert context.memory_context == (
        "<memory_context>\nKnown facts:\n"
        "- Ana diet vegan\n"
        "- Ana tone short answers\n"
        "- Ana job architect\n"
        "- Ana home Lisbon (previously: Porto)\n"
        "</memory_context>"
    )
    assert [item.value for item in context.facts] == [
        "vegan",
        "short answers",
        "architect",
        "Lisbon",
    ]
    assert context.metadata.facts_included == 4
    assert context.partitions["facts"] > 0
    assert context.messages[-1] == {"role": "user", "content": context.memory_context}


def test_facts_are_read_as_of_the_moment_of_the_turn(items: MemoryItems, clock: Clock) -> None:
    state(items, "home", "Porto", at=T0 - timedelta(days=30))
    state(items, "home", "Lisbon", at=T0 - timedelta(days=2))
    thread = new_thread()
    context = facts_builder(items, clock).build(
        thread, AGENT, user_id=USER, as_of=T0 - timedelta(days=10)
    )
    assert [item.value for item in context.facts] == ["Porto"]
    assert "previously" not in (context.memory_context or "")


def test_a_value_let_go_is_not_shown_as_previous(items: MemoryItems, clock: Clock) -> None:
    old = state(items, "home", "Porto", at=T0 - timedelta(days=30))
    state(items, "home", "Lisbon", at=T0 - timedelta(days=2))
    items.let_go([old.pk])
    context = facts_builder(items, clock).build(new_thread(), AGENT, user_id=USER)
    assert context.memory_context == (
        "<memory_context>\nKnown facts:\n- Ana home Lisbon\n</memory_context>"
    )


def test_the_narrowest_scope_wins_a_tie_of_a_slot(items: MemoryItems, clock: Clock) -> None:
    at = T0 - timedelta(days=3)
    state(items, "tone", "formal", at=at, scope=MemoryScope(AGENT), kind=ItemKind.INSTRUCTION)
    state(items, "tone", "casual", at=at, kind=ItemKind.INSTRUCTION)
    context = facts_builder(items, clock).build(new_thread(), AGENT, user_id=USER)
    assert [item.value for item in context.facts] == ["casual"]
    # and a state that started later wins whatever its scope
    later = state(
        items,
        "tone",
        "terse",
        at=T0 - timedelta(days=1),
        scope=MemoryScope(AGENT),
        kind=ItemKind.INSTRUCTION,
    )
    assert one_state_per_slot(items.query(MemoryScope(AGENT, user_id=USER))) == [later]


def test_facts_of_other_users_and_suggested_items_stay_out(
    items: MemoryItems, clock: Clock
) -> None:
    state(items, "home", "Lisbon", at=T0 - timedelta(days=2))
    state(items, "home", "Madrid", at=T0 - timedelta(days=1), scope=MemoryScope(AGENT, "bob"))
    items.write(
        MemoryScope(AGENT, user_id=USER),
        NewItem(kind="fact", subject="Ana", attribute="pet", value="cat", trust=Trust.MODEL),
    )
    context = facts_builder(items, clock).build(new_thread(), AGENT, user_id=USER)
    assert [item.value for item in context.facts] == ["Lisbon"]
    # and access limits what a caller may read
    access = Grants.for_agents([AGENT], {AGENT: [USER]})
    context = facts_builder(items, clock).build(
        new_thread("ana-2"), AGENT, user_id=USER, grants=access
    )
    assert [item.value for item in context.facts] == ["Lisbon"]


def test_a_fact_the_system_prompt_states_is_a_duplicate(items: MemoryItems, clock: Clock) -> None:
    fact = state(items, "diet", "vegan", at=T0 - timedelta(days=2), content="Ana is vegan")
    context = facts_builder(items, clock).build(
        new_thread(), AGENT, user_id=USER, system_prompt="You cook for Ana. Ana is vegan."
    )
    assert context.facts == []
    assert context.dropped.facts == [fact]
    assert [(b.partition, b.reason, b.source_id) for b in context.dropped.blocks] == [
        ("facts", "duplicate", fact.pk)
    ]


def test_facts_that_do_not_fit_are_dropped(items: MemoryItems, clock: Clock) -> None:
    for number in range(40):
        state(items, f"fact{number}", "word " * 20, at=T0 - timedelta(days=number + 1))
    context = ContextBuilder(
        ContextBuilderConfig(max_tokens=1000, reserve_tokens=0, include_facts=True),
        ContextBuilderDeps(memory_items=items, clock=clock),
    ).build(new_thread(), AGENT, user_id=USER)
    # the facts take what the history leaves, newest first
    assert 0 < len(context.facts) < 40
    assert context.partitions["facts"] <= 1000
    assert [item.attribute for item in context.facts] == [
        f"fact{number}" for number in range(len(context.facts))
    ]
    assert len(context.dropped.facts) == 40 - len(context.facts)


def test_sent_facts_are_counted_in_the_background(
    items: MemoryItems, clock: Clock, django_capture_on_commit_callbacks: Any
) -> None:
    sent = state(items, "home", "Lisbon", at=T0 - timedelta(days=2))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        facts_builder(items, clock).build(new_thread(), AGENT, user_id=USER)
    assert len(callbacks) == 1
    sent.refresh_from_db()
    assert sent.times_retrieved == 1
    assert sent.last_retrieved_at == T0


def test_facts_that_fail_to_load_are_reported(
    items: MemoryItems, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = new_thread()
    say(thread, "user", "hello")

    def down(*args: Any, **kwargs: Any) -> list[MemoryItem]:
        raise OperationalError("server closed the connection")

    monkeypatch.setattr(items, "query", down)
    context = facts_builder(items, clock).build(thread, AGENT, user_id=USER)
    assert [message["content"] for message in context.messages] == ["hello"]
    assert [(e.source, e.message) for e in context.errors] == [
        ("facts", "OperationalError: server closed the connection")
    ]
    assert context.facts == []


class Observations:
    def __init__(self, found: Sequence[Observation]) -> None:
        self.found = found

    def read(self, scope: MemoryScope, *, grants: Grants | None = None) -> Sequence[Observation]:
        return self.found


def test_a_turn_naming_an_entity_gets_its_observations(items: MemoryItems, clock: Clock) -> None:
    found = [
        Observation("ent_1", "Ana", "Travels light, plans late.", aliases=("Aninha",)),
        Observation("ent_2", "Rex", "A shy dog."),
        Observation("ent_3", "Anabela", "Ana's aunt."),
    ]
    builder = facts_builder(items, clock, observations=Observations(found))
    context = builder.build(
        new_thread(), AGENT, user_id=USER, current_input="What would aninha like?"
    )
    assert context.memory_context == (
        "<memory_context>\nObservations:\n- Ana: Travels light, plans late.\n</memory_context>"
    )
    context = builder.build(new_thread("ana-2"), AGENT, current_input="Is the weather nice?")
    assert context.memory_context is None


@pytest.mark.parametrize("seed", range(6))
def test_a_build_that_recalls_gets_the_facts_a_plain_read_gets(
    items: MemoryItems, clock: Clock, seed: int
) -> None:
    # given slots that changed, were let go, went stale, end or start in the future,
    # for the user, the agent and another user
    rng = random.Random(seed)
    written: list[MemoryItem] = []
    for number in range(40):
        scope = rng.choice(
            [
                MemoryScope(AGENT, user_id=USER),
                MemoryScope(AGENT),
                MemoryScope(AGENT, user_id="someone-else"),
            ]
        )
        clock.now = T0 + timedelta(minutes=number)
        written.append(
            state(
                items,
                rng.choice(["home", "job", "diet", "pet"]),
                rng.choice(["a", "b", "c", "A", "b "]),
                at=T0 + timedelta(days=rng.randint(-60, 20)),
                kind=rng.choice([ItemKind.FACT, ItemKind.PREFERENCE, ItemKind.EVENT]),
                scope=scope,
                subject=rng.choice(["Ana", "Rui"]),
            )
        )
    items.let_go([item.pk for item in rng.sample(written, 4)])
    items.mark_stale([item.pk for item in rng.sample(written, 4)], because={"reason": "changed"})
    clock.now = T0 + timedelta(days=1)
    thread = new_thread()
    for as_of in (T0 - timedelta(days=20), T0, T0 + timedelta(days=30)):
        # when
        plain = facts_builder(items, clock).build(thread, AGENT, user_id=USER, as_of=as_of)
        recalling = ContextBuilder(
            ContextBuilderConfig(max_tokens=2000, include_facts=True, strategy="hybrid"),
            ContextBuilderDeps(memory_items=items, clock=clock, message_index=False),
        ).build(thread, AGENT, user_id=USER, as_of=as_of, current_input="where does Ana live")
        # then
        assert [item.pk for item in recalling.facts] == [item.pk for item in plain.facts]
        fact_lines = [line for line in plain.memory_context.splitlines() if line.startswith("- ")]
        assert fact_lines
        assert fact_lines == [
            line for line in recalling.memory_context.splitlines() if line in fact_lines
        ]


def test_a_build_that_recalls_reads_the_items_once(
    items: MemoryItems, clock: Clock, django_assert_max_num_queries: Any
) -> None:
    state(items, "home", "Porto", at=T0 - timedelta(days=30))
    state(items, "home", "Lisbon", at=T0 - timedelta(days=2))
    thread = new_thread()
    say(thread, "user", "I moved last week")
    builder = ContextBuilder(
        ContextBuilderConfig(max_tokens=2000, include_facts=True, strategy="hybrid"),
        ContextBuilderDeps(memory_items=items, clock=clock, message_index=False),
    )
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        context = builder.build(thread, AGENT, user_id=USER, current_input="where is home")
    item_reads = [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].lstrip().startswith("SELECT")
        and 'FROM "cogitator_memory_memoryitem"' in query["sql"]
    ]
    assert "- Ana home Lisbon (previously: Porto)" in context.memory_context
    # one read (SQLite asks the user's and the shared ones apart)
    assert len(item_reads) == (2 if connection.vendor == "sqlite" else 1), item_reads
