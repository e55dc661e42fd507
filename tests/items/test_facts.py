"""Core facts and free facts, kept as memory items."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cogitator_memory.exceptions import InvalidItem, ItemNotFound
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.facts import CoreFactsStore, FactAdapter
from cogitator_memory.items.models import ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def facts(clock: Clock) -> CoreFactsStore:
    return CoreFactsStore(items=MemoryItems(clock=clock))


def test_core_facts_set_get_and_supersede(facts: CoreFactsStore, clock: Clock) -> None:
    facts.set("name", "Alice")
    clock.now = T0 + timedelta(days=1)
    facts.set("city", "Lisbon")
    assert facts.get("name") == "Alice"
    assert facts.get_all() == {"city": "Lisbon", "name": "Alice"}
    clock.now = T0 + timedelta(days=2)
    facts.set("name", "Alicia")
    assert facts.get("name") == "Alicia"
    assert [(c.value, c.set_at) for c in facts.get_history("name")] == [
        ("Alice", T0),
        ("Alicia", T0 + timedelta(days=2)),
    ]
    items = MemoryItem.objects.filter(attribute="core:name")
    assert {(i.value, i.status, i.trust) for i in items} == {
        ("Alice", ItemStatus.SUPERSEDED, "system"),
        ("Alicia", ItemStatus.ACTIVE, "system"),
    }


def test_the_same_value_again_changes_nothing(facts: CoreFactsStore) -> None:
    first = facts.set("name", "Alice")
    again = facts.set("name", " Alice ")
    assert again.pk == first.pk
    assert MemoryItem.objects.count() == 1


def test_delete_lets_the_value_go_and_keeps_the_history(
    facts: CoreFactsStore, clock: Clock
) -> None:
    facts.set("name", "Alice")
    clock.now = T0 + timedelta(days=1)
    assert facts.delete("name") is True
    assert facts.get("name") is None
    assert facts.get_all() == {}
    assert [c.value for c in facts.get_history("name")] == ["Alice"]
    assert facts.delete("name") is False


def test_format_for_prompt(facts: CoreFactsStore) -> None:
    assert facts.format_for_prompt() == ""
    facts.set("name", "Alice")
    facts.set("diet", "vegetarian")
    assert facts.format_for_prompt() == (
        "Known facts about the user:\n- diet: vegetarian\n- name: Alice"
    )


def test_core_facts_of_one_scope_are_not_anothers(clock: Clock) -> None:
    ana = CoreFactsStore(MemoryScope("core", user_id="ana"), items=MemoryItems(clock=clock))
    ben = CoreFactsStore(MemoryScope("core", user_id="ben"), items=MemoryItems(clock=clock))
    ana.set("name", "Ana")
    assert ben.get("name") is None
    assert ben.get_all() == {}


def test_a_users_core_facts_stand_beside_the_agents_own(clock: Clock) -> None:
    agent_wide = CoreFactsStore(MemoryScope("core"), items=MemoryItems(clock=clock))
    ana = CoreFactsStore(MemoryScope("core", user_id="ana"), items=MemoryItems(clock=clock))
    agent_wide.set("team", "blue")
    ana.set("name", "Ana")
    assert ana.get("name") == "Ana"
    assert ana.get_all()["name"] == "Ana"
    assert agent_wide.get("name") is None
    assert agent_wide.get_all() == {"team": "blue"}


@pytest.mark.parametrize("key", ["", "  ", "x" * 201, "a\x00b", 3])
def test_a_bad_key_is_refused(facts: CoreFactsStore, key) -> None:
    with pytest.raises(InvalidItem):
        facts.set(key, "value")


def test_free_facts_add_get_update_remove_search() -> None:
    adapter = FactAdapter()
    scope = MemoryScope("concierge", user_id="ana")
    fact = adapter.add(scope, "Ana is allergic to peanuts", category="health")
    other = adapter.add(scope, "Ana likes aisle seats", category="travel", confidence=0.8)
    assert {f.id for f in adapter.get(scope)} == {fact.id, other.id}
    assert [f.id for f in adapter.get(scope, category="health")] == [fact.id]
    assert [f.id for f in adapter.search(scope, "PEANUTS ana")] == [fact.id]
    updated = adapter.update(scope, fact.id, "Ana is allergic to peanuts and shellfish")
    assert updated.id == fact.id and updated.category == "health"
    assert [f.content for f in adapter.get(scope, category="health")] == [
        "Ana is allergic to peanuts and shellfish"
    ]
    assert adapter.remove(scope, other.id) is True
    assert [f.id for f in adapter.get(scope)] == [fact.id]
    with pytest.raises(ItemNotFound):
        adapter.update(scope, other.id, "gone")


def test_a_fact_from_an_untrusted_source_waits_for_review() -> None:
    adapter = FactAdapter()
    scope = MemoryScope("concierge")
    fact = adapter.add(scope, "The moon is cheese", source="web")
    assert fact.status == ItemStatus.SUGGESTED
    assert adapter.get(scope) == []
