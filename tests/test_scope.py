"""Scope: the one place where what a caller may see is decided."""

import pytest

from cogitator_memory.scope import Scope
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def threads():
    return {
        "a_u1": services.create_thread("agent-a", {"userId": "u1"}),
        "a_u2": services.create_thread("agent-a", {"userId": "u2"}),
        "b_num": services.create_thread("agent-b", {"userId": 5}),
        "b_none": services.create_thread("agent-b"),
    }


def visible_threads(scope: Scope) -> set[str]:
    return set(Thread.objects.visible_to(scope).values_list("id", flat=True))


def test_unrestricted_scope_sees_every_thread(threads):
    assert visible_threads(Scope.everything()) == {t.id for t in threads.values()}


def test_scope_without_grants_sees_nothing(threads):
    assert visible_threads(Scope.nothing()) == set()


def test_agent_grant_sees_only_that_agents_threads(threads):
    assert visible_threads(Scope.for_agents(["agent-a"])) == {
        threads["a_u1"].id,
        threads["a_u2"].id,
    }


def test_user_grant_limits_one_agent_and_leaves_the_other_whole(threads):
    # given a scope that sees user u1 of agent-a and all of agent-b
    scope = Scope.for_agents(["agent-a", "agent-b"], {"agent-a": ["u1"]})
    # then
    assert visible_threads(scope) == {threads["a_u1"].id, threads["b_num"].id, threads["b_none"].id}


def test_user_ids_match_by_type_so_a_number_is_not_its_text(threads):
    # given a thread whose userId is the number 5
    scope = Scope.for_agents(["agent-b"], {"agent-b": ["5"]})
    # then the text "5" does not see it, nor a thread without a user
    assert visible_threads(scope) == set()


def test_entries_follow_the_scope_of_their_thread(threads):
    # given
    mine = services.add_entry(threads["a_u1"].id, role="user", content="mine")
    services.add_entry(threads["a_u2"].id, role="user", content="not mine")
    # when
    scope = Scope.for_agents(["agent-a"], {"agent-a": ["u1"]})
    # then
    assert list(Entry.objects.visible_to(scope).values_list("id", flat=True)) == [mine.id]


def test_allows_mirrors_the_queryset():
    scope = Scope.for_agents(["agent-a", "agent-b"], {"agent-a": ["u1"]})
    assert scope.allows("agent-a", "u1")
    assert not scope.allows("agent-a", "u2")
    assert not scope.allows("agent-a", None)
    assert scope.allows("agent-b", None)
    assert not scope.allows("agent-c", None)
    assert Scope.everything().allows("anything", None)
