"""The grant admin: adding grants, the one-principal rule, the list."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser, Permission
from django.test import Client
from django.urls import reverse
from rest_framework_api_key.models import APIKey

from cogitator_memory.access.models import Grant

pytestmark = pytest.mark.django_db

ADD_URL = "admin:cogitator_memory_grant_add"
LIST_URL = "admin:cogitator_memory_grant_changelist"


@pytest.fixture
def alice(django_user_model: type) -> AbstractBaseUser:
    user: AbstractBaseUser = django_user_model.objects.create_user("alice", password="pw")
    return user


@pytest.fixture
def service_key() -> APIKey:
    api_key, _secret = APIKey.objects.create_key(name="billing-service")
    return api_key


def add_grant(client: Client, **fields: Any) -> Any:
    data = {"user": "", "api_key": "", "agent_id": "", "user_ids": "", **fields}
    return client.post(reverse(ADD_URL), data)


def form_errors(response: Any) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = response.context["adminform"].form.errors
    return errors


def test_grant_for_a_user_is_added(admin_client: Client, alice: AbstractBaseUser) -> None:
    # when
    response = add_grant(admin_client, user=alice.pk, agent_id="support-bot")
    # then
    assert response.status_code == 302
    grant = Grant.objects.get()
    assert (grant.user_id, grant.api_key_id, grant.agent_id, grant.user_ids) == (
        alice.pk,
        None,
        "support-bot",
        None,
    )


def test_grant_for_an_api_key_with_some_users_is_added(
    admin_client: Client, service_key: APIKey
) -> None:
    # when
    response = add_grant(
        admin_client, api_key=service_key.pk, agent_id="support-bot", user_ids='["u-1", "u-2"]'
    )
    # then
    assert response.status_code == 302
    grant = Grant.objects.get()
    assert (grant.api_key_id, grant.user_ids) == (service_key.pk, ["u-1", "u-2"])


def test_grant_without_a_principal_is_refused(admin_client: Client) -> None:
    # when
    response = add_grant(admin_client, agent_id="support-bot")
    # then
    assert response.status_code == 200
    assert form_errors(response) == {
        "__all__": ["A grant names exactly one principal: a user or an API key."],
        "user": ["Choose a user or an API key."],
        "api_key": ["Choose a user or an API key."],
    }
    assert not Grant.objects.exists()


def test_grant_with_both_a_user_and_an_api_key_is_refused(
    admin_client: Client, alice: AbstractBaseUser, service_key: APIKey
) -> None:
    # when
    response = add_grant(
        admin_client, user=alice.pk, api_key=service_key.pk, agent_id="support-bot"
    )
    # then
    assert response.status_code == 200
    assert form_errors(response) == {
        "__all__": ["A grant names exactly one principal: a user or an API key."],
        "user": ["Clear the user or the API key."],
        "api_key": ["Clear the user or the API key."],
    }
    assert not Grant.objects.exists()


def test_grant_with_user_ids_that_are_not_a_list_of_texts_is_refused(
    admin_client: Client, alice: AbstractBaseUser
) -> None:
    # when
    response = add_grant(admin_client, user=alice.pk, agent_id="support-bot", user_ids="[1, 2]")
    # then
    assert response.status_code == 200
    assert form_errors(response) == {"user_ids": ["A list of user ids (texts), or empty."]}
    assert not Grant.objects.exists()


def test_second_grant_of_one_agent_to_one_user_is_refused(
    admin_client: Client, alice: AbstractBaseUser
) -> None:
    # given
    Grant.objects.create(user=alice, agent_id="support-bot")
    # when
    response = add_grant(admin_client, user=alice.pk, agent_id="support-bot")
    # then
    assert response.status_code == 200
    assert form_errors(response) == {
        "agent_id": ["alice already has a grant of agent support-bot."]
    }
    assert Grant.objects.count() == 1


def test_grant_list_shows_the_principal_the_agent_and_the_users(
    admin_client: Client, alice: AbstractBaseUser, service_key: APIKey
) -> None:
    # given
    Grant.objects.create(user=alice, agent_id="support-bot")
    Grant.objects.create(api_key=service_key, agent_id="sales-bot", user_ids=["u-1", "u-2"])
    # when
    html = admin_client.get(reverse(LIST_URL)).content.decode()
    # then
    assert "user: alice" in html
    assert "all users" in html
    assert "API key: billing-service" in html
    assert "u-1, u-2" in html


def test_grant_list_search_finds_grants_by_username(
    admin_client: Client, alice: AbstractBaseUser, service_key: APIKey
) -> None:
    # given
    Grant.objects.create(user=alice, agent_id="support-bot")
    Grant.objects.create(api_key=service_key, agent_id="sales-bot")
    # when
    response = admin_client.get(reverse(LIST_URL), {"q": "alice"})
    # then
    assert [grant.agent_id for grant in response.context["cl"].result_list] == ["support-bot"]


def test_grant_list_filters_api_key_grants(
    admin_client: Client, alice: AbstractBaseUser, service_key: APIKey
) -> None:
    # given
    Grant.objects.create(user=alice, agent_id="support-bot")
    Grant.objects.create(api_key=service_key, agent_id="sales-bot")
    # when
    response = admin_client.get(reverse(LIST_URL), {"principal": "api_key"})
    # then
    assert [grant.agent_id for grant in response.context["cl"].result_list] == ["sales-bot"]


def test_grant_list_filters_by_agent(
    admin_client: Client, alice: AbstractBaseUser, service_key: APIKey
) -> None:
    # given
    Grant.objects.create(user=alice, agent_id="support-bot")
    Grant.objects.create(api_key=service_key, agent_id="sales-bot")
    # when
    response = admin_client.get(reverse(LIST_URL), {"agent_id": "support-bot"})
    # then
    assert [grant.user_id for grant in response.context["cl"].result_list] == [alice.pk]


def test_second_grant_of_one_agent_to_one_api_key_is_refused(
    admin_client: Client, service_key: APIKey
) -> None:
    # given
    Grant.objects.create(api_key=service_key, agent_id="support-bot")
    # when
    response = add_grant(admin_client, api_key=service_key.pk, agent_id="support-bot")
    # then
    assert response.status_code == 200
    assert form_errors(response) == {
        "agent_id": ["billing-service already has a grant of agent support-bot."]
    }
    assert Grant.objects.count() == 1


def test_changing_the_users_of_a_grant_is_saved(
    admin_client: Client, alice: AbstractBaseUser
) -> None:
    # given
    grant = Grant.objects.create(user=alice, agent_id="support-bot")
    url = reverse("admin:cogitator_memory_grant_change", args=[grant.pk])
    # when
    response = admin_client.post(
        url, {"user": alice.pk, "api_key": "", "agent_id": "support-bot", "user_ids": '["u-9"]'}
    )
    # then
    assert response.status_code == 302
    grant.refresh_from_db()
    assert grant.user_ids == ["u-9"]


# --- a staff user grants only within their own grants ------------------------------------

GRANT_CODENAMES = ("add_grant", "change_grant", "delete_grant", "view_grant")


@pytest.fixture
def desk(django_user_model: type) -> AbstractBaseUser:
    """A staff user who may manage grants, granted support-bot for every user and
    sales-bot for users u-1 and u-2 only."""
    user: AbstractBaseUser = django_user_model.objects.create_user(
        "desk", password="pw", is_staff=True
    )
    user.user_permissions.add(*Permission.objects.filter(codename__in=GRANT_CODENAMES))
    Grant.objects.create(user=user, agent_id="support-bot")
    Grant.objects.create(user=user, agent_id="sales-bot", user_ids=["u-1", "u-2"])
    return user


@pytest.fixture
def desk_client(desk: AbstractBaseUser) -> Client:
    client = Client()
    client.force_login(desk)
    return client


def change_grant(client: Client, grant: Grant, **fields: Any) -> Any:
    data = {
        "user": grant.user_id or "",
        "api_key": grant.api_key_id or "",
        "agent_id": grant.agent_id,
        "user_ids": "" if grant.user_ids is None else json.dumps(grant.user_ids),
        **fields,
    }
    return client.post(reverse("admin:cogitator_memory_grant_change", args=[grant.pk]), data)


def grants_of(user: AbstractBaseUser) -> set[tuple[str, str | None]]:
    return {
        (grant.agent_id, None if grant.user_ids is None else ",".join(grant.user_ids))
        for grant in Grant.objects.filter(user=user)
    }


def test_staff_cannot_grant_an_agent_they_are_not_granted(
    desk_client: Client, alice: AbstractBaseUser
) -> None:
    # when
    response = add_grant(desk_client, user=alice.pk, agent_id="billing-bot")
    # then
    assert response.status_code == 200
    assert form_errors(response) == {
        "agent_id": ["You may grant only the agents granted to you: sales-bot, support-bot."]
    }
    assert not Grant.objects.filter(user=alice).exists()


def test_staff_cannot_grant_themselves_anything(
    desk_client: Client, desk: AbstractBaseUser
) -> None:
    # given their own grants, before
    before = grants_of(desk)
    # when: a new agent, and an agent they already reach, to themselves
    refused = [
        add_grant(desk_client, user=desk.pk, agent_id="billing-bot"),
        add_grant(desk_client, user=desk.pk, agent_id="other-bot"),
    ]
    # then
    for response in refused:
        assert response.status_code == 200
        assert form_errors(response)["user"] == [
            "You may not grant yourself; a superuser changes your grants."
        ]
    assert grants_of(desk) == before


def test_staff_grants_an_agent_of_theirs_to_another_user(
    desk_client: Client, alice: AbstractBaseUser, service_key: APIKey
) -> None:
    # when
    to_alice = add_grant(desk_client, user=alice.pk, agent_id="support-bot")
    to_key = add_grant(desk_client, api_key=service_key.pk, agent_id="support-bot")
    # then
    assert (to_alice.status_code, to_key.status_code) == (302, 302)
    assert grants_of(alice) == {("support-bot", None)}
    assert Grant.objects.filter(api_key=service_key, agent_id="support-bot").exists()


@pytest.mark.parametrize(
    ("user_ids", "allowed"),
    [("", False), ('["u-3"]', False), ('["u-1", "u-3"]', False), ('["u-1"]', True)],
)
def test_under_a_grant_naming_users_staff_grants_only_those_users(
    desk_client: Client, alice: AbstractBaseUser, user_ids: str, allowed: bool
) -> None:
    # when
    response = add_grant(desk_client, user=alice.pk, agent_id="sales-bot", user_ids=user_ids)
    # then
    if allowed:
        assert response.status_code == 302
        assert grants_of(alice) == {("sales-bot", "u-1")}
        return
    assert response.status_code == 200
    assert form_errors(response) == {
        "user_ids": ["Your grant of sales-bot names users u-1, u-2: grant only some of them."]
    }
    assert not Grant.objects.filter(user=alice).exists()


def test_staff_cannot_widen_a_grant_they_see_by_editing_it(
    desk_client: Client, alice: AbstractBaseUser
) -> None:
    # given a grant of alice's within the desk's reach
    grant = Grant.objects.create(user=alice, agent_id="sales-bot", user_ids=["u-1"])
    # when: every user of sales-bot, another agent, a user beyond the desk's
    answers = [
        change_grant(desk_client, grant, user_ids=""),
        change_grant(desk_client, grant, agent_id="billing-bot"),
        change_grant(desk_client, grant, user_ids='["u-1", "u-9"]'),
    ]
    # then
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert [sorted(form_errors(answer)) for answer in answers] == [
        ["user_ids"],
        ["agent_id"],
        ["user_ids"],
    ]
    grant.refresh_from_db()
    assert (grant.agent_id, grant.user_ids) == ("sales-bot", ["u-1"])
    # and narrowing it is theirs to do
    assert change_grant(desk_client, grant, user_ids='["u-2"]').status_code == 302
    grant.refresh_from_db()
    assert grant.user_ids == ["u-2"]


def test_staff_cannot_hand_a_grant_they_see_to_themselves(
    desk_client: Client, desk: AbstractBaseUser, alice: AbstractBaseUser
) -> None:
    grant = Grant.objects.create(user=alice, agent_id="support-bot", user_ids=["u-5"])
    response = change_grant(desk_client, grant, user=desk.pk)
    assert response.status_code == 200
    assert "user" in form_errors(response)
    assert Grant.objects.get(pk=grant.pk).user_id == alice.pk


def test_staff_cannot_change_or_delete_their_own_grants(
    desk_client: Client, desk: AbstractBaseUser
) -> None:
    # given
    own = Grant.objects.get(user=desk, agent_id="sales-bot")
    before = grants_of(desk)
    # when
    widened = change_grant(desk_client, own, user_ids="")
    deleted = desk_client.post(
        reverse("admin:cogitator_memory_grant_delete", args=[own.pk]), {"post": "yes"}
    )
    # then: they may see them, not change them
    assert (widened.status_code, deleted.status_code) == (403, 403)
    assert grants_of(desk) == before
    page = desk_client.get(reverse("admin:cogitator_memory_grant_change", args=[own.pk]))
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()


def test_grants_beyond_the_staff_users_reach_are_neither_listed_changed_nor_deleted(
    desk_client: Client, alice: AbstractBaseUser
) -> None:
    # given grants of alice's beyond the desk's reach
    other_agent = Grant.objects.create(user=alice, agent_id="billing-bot")
    other_users = Grant.objects.create(user=alice, agent_id="sales-bot", user_ids=["u-9"])
    mine = Grant.objects.create(user=alice, agent_id="support-bot")
    reachable = {*Grant.objects.filter(user__username="desk").values_list("pk", flat=True), mine.pk}
    # when
    listed = desk_client.get(reverse(LIST_URL))
    changes = [
        change_grant(desk_client, grant, user_ids='["x"]') for grant in (other_agent, other_users)
    ]
    deletes = [
        desk_client.post(
            reverse("admin:cogitator_memory_grant_delete", args=[grant.pk]), {"post": "yes"}
        )
        for grant in (other_agent, other_users)
    ]
    bulk = desk_client.post(
        reverse(LIST_URL),
        {
            "action": "delete_selected",
            "_selected_action": [other_agent.pk, other_users.pk, mine.pk],
            "post": "yes",
        },
    )
    # then: the list holds the desk's own grants and alice's support-bot grant only
    assert {grant.pk for grant in listed.context["cl"].result_list} == reachable
    # and nothing beyond the reach changed or went; the bulk delete took only what it may
    assert [answer.status_code for answer in changes] == [302, 302]  # "does not exist"
    assert [answer.status_code for answer in deletes] == [302, 302]
    assert bulk.status_code == 302
    assert set(Grant.objects.filter(user=alice).values_list("pk", flat=True)) == {
        other_agent.pk,
        other_users.pk,
    }
    assert Grant.objects.get(pk=other_users.pk).user_ids == ["u-9"]


def test_a_superuser_grants_freely(admin_client: Client, admin_user: AbstractBaseUser) -> None:
    response = add_grant(admin_client, user=admin_user.pk, agent_id="anything-bot")
    assert response.status_code == 302
    assert grants_of(admin_user) == {("anything-bot", None)}
