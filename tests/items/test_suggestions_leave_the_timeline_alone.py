"""A suggested state is out of the slot's timeline until a person activates it: the user's
repeat of the active value merges into the active state past any suggestion, a suggestion
contradicts nothing and is contradicted by nothing, and once activated it takes its place
by its time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem, Slot
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ANA = MemoryScope("concierge", user_id="ana")
DAY = timedelta(days=1)


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


@pytest.fixture
def say():
    """Ana says ``text`` in her thread; returns the entry."""
    thread = threads.create_thread("concierge", {"userId": "ana"})

    def said(text: str) -> Entry:
        return threads.add_entry(thread.pk, role="user", content=text)

    return said


def drink(value: str, trust: str, *quotes: Entry, **fields: Any) -> NewItem:
    """A statement of what Ana drinks, quoting the whole of each entry."""
    return NewItem(
        kind=fields.pop("kind", "preference"),
        subject="Ana",
        attribute="drink",
        value=value,
        trust=trust,
        confidence=fields.pop("confidence", 0.9),
        evidence=[NewEvidence(quote=str(entry.content), entry_id=entry.pk) for entry in quotes],
        **fields,
    )


def states(items: MemoryItems) -> list[tuple[str, str, Any, Any]]:
    entity = Entity.objects.get(key="ana")
    return [
        (item.value, item.status, item.valid_from, item.valid_to)
        for item in items.history(ANA, Slot(entity.pk, "drink"))
    ]


def test_the_users_repeat_merges_into_the_active_state_past_a_suggestion(
    items: MemoryItems, clock: Clock, say
) -> None:
    # given the user's active tea, and a model's suggestion of coffee after it
    tea = items.write(ANA, drink("tea", "user", say("tea"))).item
    clock.now = T0 + DAY
    coffee = items.write(ANA, drink("coffee", "model")).item
    assert (tea.status, coffee.status) == (ItemStatus.ACTIVE, ItemStatus.SUGGESTED)
    # when the user says tea again
    clock.now = T0 + 2 * DAY
    again = items.write(ANA, drink("tea", "user", say("tea, as always")))
    # then it merges into the active tea: no new state, the timeline as it was
    assert (again.merged, again.item.pk) == (True, tea.pk)
    assert MemoryItem.objects.count() == 2
    assert states(items) == [
        ("tea", ItemStatus.ACTIVE, T0, None),
        ("coffee", ItemStatus.SUGGESTED, T0 + DAY, None),
    ]
    assert [item.pk for item in items.query(ANA)] == [tea.pk]


def test_a_model_repeating_the_active_value_merges_into_it_too(
    items: MemoryItems, clock: Clock, say
) -> None:
    tea = items.write(ANA, drink("tea", "user", say("tea"))).item
    clock.now = T0 + DAY
    items.write(ANA, drink("coffee", "model"))
    again = items.write(ANA, drink("tea", "model"))
    assert (again.merged, again.item.pk, again.item.trust) == (True, tea.pk, "user")


def test_after_activating_the_suggestion_the_timeline_is_laid_out_by_time(
    items: MemoryItems, clock: Clock, say
) -> None:
    # given the user's tea, the model's coffee a day later, and the user's tea repeated
    tea = items.write(ANA, drink("tea", "user", say("tea"))).item
    clock.now = T0 + DAY
    coffee = items.write(ANA, drink("coffee", "model")).item
    clock.now = T0 + 2 * DAY
    items.write(ANA, drink("tea", "user", say("tea")))
    # when a reviewer activates the coffee
    clock.now = T0 + 3 * DAY
    assert items.activate([coffee.pk]) == [coffee.pk]
    # then it takes its place by its start: tea until then, coffee from then on
    assert states(items) == [
        ("tea", ItemStatus.SUPERSEDED, T0, T0 + DAY),
        ("coffee", ItemStatus.ACTIVE, T0 + DAY, None),
    ]
    assert [item.pk for item in items.query(ANA)] == [coffee.pk]
    tea.refresh_from_db()
    assert tea.valid_to_known_at == T0 + 3 * DAY


def test_a_suggestion_absorbs_a_repeat_of_itself_while_it_is_the_newest_state(
    items: MemoryItems, clock: Clock, say
) -> None:
    # given the user's tea and the model's coffee after it
    items.write(ANA, drink("tea", "user", say("tea")))
    clock.now = T0 + DAY
    coffee = items.write(ANA, drink("coffee", "model")).item
    # when the user says coffee
    clock.now = T0 + 2 * DAY
    said = items.write(ANA, drink("coffee", "user", say("coffee")))
    # then the suggestion takes it, and the user's grounded word makes it active
    assert (said.merged, said.item.pk, said.item.status) == (True, coffee.pk, ItemStatus.ACTIVE)
    assert states(items) == [
        ("tea", ItemStatus.SUPERSEDED, T0, T0 + DAY),
        ("coffee", ItemStatus.ACTIVE, T0 + DAY, None),
    ]


def test_a_suggestion_another_state_followed_absorbs_nothing(
    items: MemoryItems, clock: Clock, say
) -> None:
    # given the model's coffee, then its milk
    coffee = items.write(ANA, drink("coffee", "model")).item
    clock.now = T0 + DAY
    items.write(ANA, drink("milk", "model"))
    # when the user says coffee
    clock.now = T0 + 2 * DAY
    said = items.write(ANA, drink("coffee", "user", say("coffee")))
    # then it is a state of its own, from when she said it
    assert said.merged is False and said.item.pk != coffee.pk
    assert (said.item.status, said.item.valid_from) == (ItemStatus.ACTIVE, T0 + 2 * DAY)


def test_a_suggested_opinion_does_not_lower_the_active_ones_confidence(
    items: MemoryItems, clock: Clock, say
) -> None:
    # given the user's active opinion
    opinion = {"kind": "opinion", "confidence": 0.8}
    tea = items.write(ANA, drink("tea", "user", say("tea"), **opinion)).item
    assert tea.status == ItemStatus.ACTIVE
    # when a model, a tool and a page each suggest another
    for trust in ("model", "tool", "web"):
        clock.now += DAY
        written = items.write(ANA, drink(f"coffee from {trust}", trust, **opinion))
        assert written.item.status == ItemStatus.SUGGESTED
    # then the active opinion keeps its confidence and its place
    tea.refresh_from_db()
    assert (tea.status, tea.confidence, tea.valid_to) == (ItemStatus.ACTIVE, 0.8, None)


def test_a_suggested_opinion_is_not_contradicted(items: MemoryItems, clock: Clock, say) -> None:
    # given the system's opinion written in shadow mode (suggested, for review)
    opinion = {"kind": "opinion", "confidence": 0.8}
    held = items.write(ANA, drink("tea", "system", **opinion), activate=False).item
    assert held.status == ItemStatus.SUGGESTED
    # when the user, a less trusted source, states another that becomes active
    clock.now = T0 + DAY
    coffee = items.write(ANA, drink("coffee", "user", say("coffee"), **opinion)).item
    assert coffee.status == ItemStatus.ACTIVE
    # then the suggestion keeps the confidence it was written with, for its reviewer
    held.refresh_from_db()
    assert held.confidence == 0.8


def test_an_active_newcomer_still_contradicts_the_active_opinion(
    items: MemoryItems, clock: Clock, say
) -> None:
    opinion = {"kind": "opinion", "confidence": 0.8}
    held = items.write(ANA, drink("tea", "system", **opinion)).item
    clock.now = T0 + DAY
    items.write(ANA, drink("coffee", "model", **opinion))  # suggested: costs nothing
    held.refresh_from_db()
    assert held.confidence == 0.8
    items.write(ANA, drink("coffee", "user", say("coffee"), **opinion))  # active: costs 0.2
    held.refresh_from_db()
    assert held.confidence == pytest.approx(0.6)


def test_letting_a_suggestion_go_leaves_the_timeline_alone(
    items: MemoryItems, clock: Clock, say
) -> None:
    # given the user's tea and the model's coffee after it
    tea = items.write(ANA, drink("tea", "user", say("tea"))).item
    clock.now = T0 + DAY
    coffee = items.write(ANA, drink("coffee", "model")).item
    # when a reviewer lets the suggestion go
    clock.now = T0 + 2 * DAY
    assert items.let_go([coffee.pk]) == [coffee.pk]
    # then the tea still holds: a state that never held has no place to keep
    assert [item.pk for item in items.query(ANA)] == [tea.pk]
    assert states(items)[0] == ("tea", ItemStatus.ACTIVE, T0, None)
