"""The grant admin: adding grants, the one-principal rule, the list."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
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
