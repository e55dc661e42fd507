"""Grants: the one place where what a caller may see is decided."""

import pytest

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.grants import Grants, MemoryScope, grants_condition, thread_owner
from cogitator_memory.items.models import Entity
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def threads():
    return {
        "a_u1": services.create_thread("agent-a", {"userId": "u1"}),
        "a_u2": services.create_thread("agent-a", {"userId": "u2"}),
        "b_u5": services.create_thread("agent-b", {"userId": "5"}),
        "b_none": services.create_thread("agent-b"),
    }


def visible_threads(grants: Grants) -> set[str]:
    return set(Thread.objects.visible_to(grants).values_list("id", flat=True))


def test_unrestricted_scope_sees_every_thread(threads):
    assert visible_threads(Grants.everything()) == {t.id for t in threads.values()}


def test_scope_without_grants_sees_nothing(threads):
    assert visible_threads(Grants.nothing()) == set()


def test_agent_grant_sees_only_that_agents_threads(threads):
    assert visible_threads(Grants.for_agents(["agent-a"])) == {
        threads["a_u1"].id,
        threads["a_u2"].id,
    }


def test_user_grant_limits_one_agent_and_leaves_the_other_whole(threads):
    # given a scope that sees user u1 of agent-a and all of agent-b
    scope = Grants.for_agents(["agent-a", "agent-b"], {"agent-a": ["u1"]})
    # then
    assert visible_threads(scope) == {threads["a_u1"].id, threads["b_u5"].id, threads["b_none"].id}


def test_a_grant_naming_users_does_not_see_a_thread_of_no_user(threads):
    scope = Grants.for_agents(["agent-b"], {"agent-b": ["5"]})
    assert visible_threads(scope) == {threads["b_u5"].id}


@pytest.mark.parametrize("user_id", [5, 5.0, True, ["u1"], {"id": "u1"}, "", "x" * 256])
def test_a_user_id_that_is_not_a_text_is_refused_not_converted(user_id):
    # given metadata whose userId another reader could compare differently
    with pytest.raises(InvalidInput) as refused:
        services.create_thread("agent-a", {"userId": user_id})
    # then the field is named and nothing is written
    assert list(refused.value.errors) == ["metadata.userId"]
    assert Thread.objects.count() == 0


def test_the_owner_column_follows_the_metadata_on_every_write(threads):
    thread = threads["a_u1"]
    assert Thread.objects.get(pk=thread.pk).user_id == "u1"
    services.update_thread(thread.pk, {"userId": "u9"})
    assert Thread.objects.get(pk=thread.pk).user_id == "u9"
    services.update_thread(thread.pk, {"topic": "x"}, replace=True)
    assert Thread.objects.get(pk=thread.pk).user_id is None
    services.update_thread(thread.pk, {"userId": None})
    assert Thread.objects.get(pk=thread.pk).user_id is None


def test_thread_owner_reads_one_rule():
    assert thread_owner(None) is None
    assert thread_owner({}) is None
    assert thread_owner({"userId": None}) is None
    assert thread_owner({"userId": "ana"}) == "ana"
    with pytest.raises(InvalidInput):
        thread_owner({"userId": 7})


def test_entries_follow_the_scope_of_their_thread(threads):
    # given
    mine = services.add_entry(threads["a_u1"].id, role="user", content="mine")
    services.add_entry(threads["a_u2"].id, role="user", content="not mine")
    # when
    scope = Grants.for_agents(["agent-a"], {"agent-a": ["u1"]})
    # then
    assert list(Entry.objects.visible_to(scope).values_list("id", flat=True)) == [mine.id]


def test_scope_condition_is_none_for_a_scope_that_sees_nothing():
    assert grants_condition(Grants.nothing(), agent_field="a", user_field="u") is None
    assert Thread.objects.visible_to(Grants.nothing()).query.is_empty()


def test_allows_mirrors_the_queryset(threads):
    scopes = [
        Grants.for_agents(["agent-a", "agent-b"], {"agent-a": ["u1"]}),
        Grants.for_agents(["agent-b"], {"agent-b": ["5"]}),
        Grants.for_agents(["agent-a"]),
        Grants.nothing(),
        Grants.everything(),
    ]
    for scope in scopes:
        in_python = {t.id for t in Thread.objects.all() if scope.allows_thread(t)}
        assert in_python == visible_threads(scope)
    scope = scopes[0]
    assert scope.allows("agent-a", "u1")
    assert not scope.allows("agent-a", "u2")
    assert not scope.allows("agent-a", None)
    assert scope.allows("agent-b", None)
    assert not scope.allows("agent-c", None)
    assert Grants.everything().allows("anything", None)


@pytest.mark.parametrize(
    ("agent_id", "user_ids", "covered"),
    [
        ("a", None, True),  # every user of an agent granted for every user
        ("a", ["x"], True),
        ("b", ["u1"], True),  # some of the users named
        ("b", [], True),
        ("b", ["u1", "u3"], False),  # a user beyond them
        ("b", None, False),  # every user, where only some are granted
        ("c", ["u1"], False),  # an agent not granted
        (None, None, False),
    ],
)
def test_covers_says_whether_a_grant_stays_within_the_grants(agent_id, user_ids, covered):
    grants = Grants.for_agents(["a", "b"], {"b": ["u1", "u2"]})
    assert grants.covers(agent_id, user_ids) is covered
    assert Grants.everything().covers(agent_id, user_ids) is True
    assert Grants.nothing().covers(agent_id, user_ids) is False


def test_every_model_with_an_owner_gets_visible_to_from_the_one_mixin() -> None:
    """A model whose rows carry an owner (an agent, a user) is reached through
    ``visible_to(grants)`` built by ``GrantedQuerySet``; one with the four scope columns
    also gets ``seen_from`` from ``ScopedQuerySet``. A new model that types its own
    condition fails here."""
    from django.apps import apps

    from cogitator_memory.access.models import Grant
    from cogitator_memory.grants import SCOPE_FIELDS, GrantedQuerySet, ScopedQuerySet
    from cogitator_memory.threads.models import Entry

    checked = []
    for model in apps.get_app_config("cogitator_memory").get_models():
        if model is Grant:  # the grant itself, not a row someone owns
            continue
        columns = {field.attname for field in model._meta.concrete_fields}
        rows = model._default_manager.all()
        if {"agent_id", "user_id"} <= columns or model is Entry:
            assert isinstance(rows, GrantedQuerySet), model.__name__
            checked.append(model.__name__)
        if set(SCOPE_FIELDS) <= columns:
            assert isinstance(rows, ScopedQuerySet), model.__name__
    assert {"Thread", "Entry", "MemoryItem", "Embedding", "KeywordCorpus"} <= set(checked)


def test_of_exact_scope_reads_neither_wider_nor_narrower_scopes() -> None:
    scopes = [
        MemoryScope("agent-a"),
        MemoryScope("agent-a", user_id="u1"),
        MemoryScope("agent-a", user_id="u1", project_id="p"),
        MemoryScope("agent-a", user_id="u1", thread_id="t"),
        MemoryScope("agent-a", user_id="u2"),
        MemoryScope("agent-b", user_id="u1"),
    ]
    for number, scope in enumerate(scopes):
        Entity.objects.create(**scope.as_fields(), name=f"e{number}", key=f"e{number}")
    for number, scope in enumerate(scopes):
        names = set(Entity.objects.of_exact_scope(scope).values_list("name", flat=True))
        assert names == {f"e{number}"}, scope
