"""Who the API acts for (session, DRF token, API key), what their grants let them see,
and how fast they may ask."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.access.models import Grant
from cogitator_memory.threads.models import Thread
from tests.api.conftest import (
    API,
    PASSWORD,
    Conversation,
    Principal,
    api_key_client,
    assert_error,
    snapshot_rows,
    token_client,
    write_conversation,
)

pytestmark = pytest.mark.django_db

MakeUser = Callable[..., User]
MakeKey = Callable[..., tuple[APIKey, str]]


def listed_ids(response: Any) -> set[str]:
    assert response.status_code == 200, response.json()
    return {thread["id"] for thread in response.json()["results"]}


# --- authentication --------------------------------------------------------------------


def test_a_session_login_is_a_principal(make_user: MakeUser, conversation: Conversation):
    # given
    make_user("ana", {"agent-a": None})
    client = APIClient()
    assert client.login(username="ana", password=PASSWORD)
    # when
    response = client.get(f"{API}/threads/")
    # then
    assert listed_ids(response) == {conversation.thread_id}


def test_a_session_write_needs_the_csrf_token(make_user: MakeUser):
    # given a browser session, with CSRF checks on as in a real browser
    make_user("ana", {"agent-a": None})
    client = APIClient(enforce_csrf_checks=True)
    client.login(username="ana", password=PASSWORD)
    # when
    response = client.post(f"{API}/threads/", {"agent_id": "agent-a"}, format="json")
    # then
    body = assert_error(response, 403, "permission_denied")
    assert body["message"].startswith("CSRF Failed")
    assert not Thread.objects.exists()


def test_a_drf_token_is_a_principal(make_user: MakeUser, conversation: Conversation):
    # given
    client = token_client(make_user("ana", {"agent-a": None}))
    # when
    response = client.get(f"{API}/threads/")
    # then
    assert listed_ids(response) == {conversation.thread_id}


def test_an_unknown_token_is_401(db: None):
    # given
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef01234567")
    # when
    response = client.get(f"{API}/threads/")
    # then
    body = assert_error(response, 401, "authentication_failed")
    assert body["message"] == "Invalid token."


def test_the_token_of_an_inactive_user_is_401(make_user: MakeUser):
    # given
    client = token_client(make_user("gone", {"agent-a": None}, is_active=False))
    # when
    response = client.get(f"{API}/threads/")
    # then
    body = assert_error(response, 401, "authentication_failed")
    assert body["message"] == "User inactive or deleted."


def test_the_session_of_an_inactive_user_is_not_a_principal(make_user: MakeUser):
    # given
    client = APIClient()
    client.force_login(make_user("gone", {"agent-a": None}, is_active=False))
    # when
    response = client.get(f"{API}/threads/")
    # then
    assert_error(response, 401, "not_authenticated")


def test_an_api_key_is_a_principal(make_api_key: MakeKey, foreign_conversation: Conversation):
    # given
    _api_key, key = make_api_key("service-b", {"agent-b": None})
    # when
    response = api_key_client(key).get(f"{API}/threads/")
    # then
    assert listed_ids(response) == {foreign_conversation.thread_id}


def test_an_unknown_api_key_is_401(make_api_key: MakeKey):
    # given a key of the right form that was never issued
    _api_key, key = make_api_key("service-b", {"agent-b": None})
    prefix, _secret = key.split(".")
    # when
    response = api_key_client(f"{prefix}.not-the-secret").get(f"{API}/threads/")
    # then
    body = assert_error(response, 401, "authentication_failed")
    assert body["message"] == "Invalid API key."


def test_a_malformed_api_key_is_401(db: None):
    # when
    response = api_key_client("garbage").get(f"{API}/threads/")
    # then
    body = assert_error(response, 401, "authentication_failed")
    assert body["message"] == "Invalid API key."


def test_a_revoked_api_key_is_401(make_api_key: MakeKey, foreign_conversation: Conversation):
    # given
    _api_key, key = make_api_key("service-b", {"agent-b": None}, revoked=True)
    # when
    response = api_key_client(key).get(f"{API}/threads/{foreign_conversation.thread_id}/")
    # then: the key package does not look up revoked keys, so it is as good as unknown
    body = assert_error(response, 401, "authentication_failed")
    assert body["message"] == "Invalid API key."


def test_an_expired_api_key_is_401(make_api_key: MakeKey):
    # given
    _api_key, key = make_api_key(
        "service-b", {"agent-b": None}, expiry_date=timezone.now() - timedelta(minutes=1)
    )
    # when
    response = api_key_client(key).get(f"{API}/threads/")
    # then
    body = assert_error(response, 401, "authentication_failed")
    assert body["message"] == "This API key is revoked or expired."


def test_a_key_revoked_after_use_is_refused_from_then_on(make_api_key: MakeKey):
    # given
    api_key, key = make_api_key("service-b", {"agent-b": None})
    client = api_key_client(key)
    assert client.get(f"{API}/threads/").status_code == 200
    # when
    APIKey.objects.filter(pk=api_key.pk).update(revoked=True)
    response = client.get(f"{API}/threads/")
    # then
    assert_error(response, 401, "authentication_failed")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "threads/"),
        ("post", "threads/"),
        ("get", "threads/{thread}/"),
        ("patch", "threads/{thread}/"),
        ("delete", "threads/{thread}/"),
        ("get", "threads/{thread}/entries/"),
        ("post", "threads/{thread}/entries/"),
        ("get", "threads/{thread}/path/"),
        ("post", "threads/{thread}/rewind/"),
        ("post", "threads/{thread}/checkout/"),
        ("post", "threads/{thread}/fork/"),
        ("get", "entries/{entry}/"),
        ("delete", "entries/{entry}/"),
        ("post", "entries/{entry}/redact/"),
    ],
)
def test_an_unauthenticated_request_is_401_and_changes_nothing(
    anonymous: APIClient, conversation: Conversation, method: str, path: str
):
    # given
    before = snapshot_rows()
    url = f"{API}/" + path.format(thread=conversation.thread_id, entry=conversation.reply.pk)
    # when
    response = getattr(anonymous, method)(url, {}, format="json")
    # then
    body = assert_error(response, 401, "not_authenticated")
    assert body["message"] == "Authentication credentials were not provided."
    assert response.headers["WWW-Authenticate"] == "Token"
    assert snapshot_rows() == before


# --- grants ----------------------------------------------------------------------------


def test_a_principal_without_grants_sees_no_threads(
    make_user: MakeUser, conversation: Conversation
):
    # given
    client = token_client(make_user("nobody"))
    # when
    response = client.get(f"{API}/threads/")
    # then
    assert listed_ids(response) == set()


def test_a_principal_without_grants_may_not_create_a_thread(make_user: MakeUser):
    # given
    client = token_client(make_user("nobody"))
    # when
    response = client.post(f"{API}/threads/", {"agent_id": "agent-a"}, format="json")
    # then
    assert_error(response, 403, "permission_denied")
    assert not Thread.objects.exists()


def test_a_superuser_sees_every_agents_threads(
    make_user: MakeUser, conversation: Conversation, foreign_conversation: Conversation
):
    # given a superuser without any grant
    client = token_client(make_user("root", is_superuser=True))
    # when
    listed = client.get(f"{API}/threads/")
    foreign = client.get(f"{API}/entries/{foreign_conversation.reply.pk}/")
    # then
    assert listed_ids(listed) == {conversation.thread_id, foreign_conversation.thread_id}
    assert foreign.status_code == 200


def test_a_superuser_may_write_for_any_agent(make_user: MakeUser):
    # given
    client = token_client(make_user("root", is_superuser=True))
    # when
    response = client.post(f"{API}/threads/", {"agent_id": "agent-z"}, format="json")
    # then
    assert response.status_code == 201, response.json()
    assert Thread.objects.get(pk=response.json()["id"]).agent_id == "agent-z"


def test_a_grant_withdrawn_takes_effect_on_the_next_request(
    ana: Principal, conversation: Conversation
):
    # given
    url = f"{API}/threads/{conversation.thread_id}/"
    assert ana.client.get(url).status_code == 200
    # when
    Grant.objects.filter(user=ana.user).delete()
    response = ana.client.get(url)
    # then
    assert_error(response, 404, "thread_not_found")


class TestUserRestrictedGrant:
    """A grant of agent-a limited to user u1: only threads whose metadata.userId is u1."""

    @pytest.fixture
    def restricted(self, make_user: MakeUser) -> APIClient:
        return token_client(make_user("desk-u1", {"agent-a": ["u1"]}))

    @pytest.fixture
    def threads(self, db: None) -> dict[str, Conversation]:
        return {
            "u1": write_conversation("agent-a", {"userId": "u1"}),
            "u2": write_conversation("agent-a", {"userId": "u2"}),
            "nobody": write_conversation("agent-a", {}),
            "other-agent-u1": write_conversation("agent-b", {"userId": "u1"}),
        }

    def test_lists_only_threads_of_its_users(self, restricted: APIClient, threads):
        # when
        response = restricted.get(f"{API}/threads/")
        # then: not u2's, not one without a user, not u1's of another agent
        assert listed_ids(response) == {threads["u1"].thread_id}

    def test_a_filter_cannot_widen_the_grant(self, restricted: APIClient, threads):
        # when
        response = restricted.get(f"{API}/threads/?metadata=%7B%22userId%22%3A%22u2%22%7D")
        # then
        assert listed_ids(response) == set()

    def test_reads_of_another_users_thread_and_entries_are_404(
        self, restricted: APIClient, threads
    ):
        # given
        other = threads["u2"]
        # when
        responses = [
            restricted.get(f"{API}/threads/{other.thread_id}/"),
            restricted.get(f"{API}/threads/{other.thread_id}/entries/"),
            restricted.get(f"{API}/threads/{other.thread_id}/path/"),
            restricted.get(f"{API}/entries/{other.root.pk}/"),
        ]
        # then
        assert [r.status_code for r in responses] == [404, 404, 404, 404]

    def test_creates_a_thread_for_its_user(self, restricted: APIClient):
        # when
        response = restricted.post(
            f"{API}/threads/", {"agent_id": "agent-a", "metadata": {"userId": "u1"}}, format="json"
        )
        # then
        assert response.status_code == 201, response.json()

    @pytest.mark.parametrize(
        ("metadata", "message"),
        [
            ({"userId": "u2"}, "You have no grant for user 'u2' of agent 'agent-a'."),
            ({}, "Your grant for agent 'agent-a' names users: give metadata.userId."),
        ],
    )
    def test_may_not_create_a_thread_outside_its_users(
        self, restricted: APIClient, metadata, message
    ):
        # when
        response = restricted.post(
            f"{API}/threads/", {"agent_id": "agent-a", "metadata": metadata}, format="json"
        )
        # then
        body = assert_error(response, 403, "permission_denied")
        assert body["message"] == message
        assert not Thread.objects.exists()

    def test_a_user_id_that_is_not_a_text_is_refused_as_invalid(self, restricted: APIClient):
        # when
        response = restricted.post(
            f"{API}/threads/",
            {"agent_id": "agent-a", "metadata": {"userId": ["u1"]}},
            format="json",
        )
        # then
        assert_error(response, 400, "invalid", ["metadata.userId"])
        assert not Thread.objects.exists()

    def test_may_not_move_its_thread_to_another_user(self, restricted: APIClient, threads):
        # given
        before = snapshot_rows()
        # when
        response = restricted.patch(
            f"{API}/threads/{threads['u1'].thread_id}/",
            {"metadata": {"userId": "u2"}},
            format="json",
        )
        # then
        assert_error(response, 403, "permission_denied")
        assert snapshot_rows() == before

    def test_may_not_replace_metadata_without_its_user(self, restricted: APIClient, threads):
        # given
        before = snapshot_rows()
        # when
        response = restricted.patch(
            f"{API}/threads/{threads['u1'].thread_id}/",
            {"metadata": {"topic": "x"}, "replace": True},
            format="json",
        )
        # then
        assert_error(response, 403, "permission_denied")
        assert snapshot_rows() == before

    def test_may_change_other_metadata_of_its_thread(self, restricted: APIClient, threads):
        # when
        response = restricted.patch(
            f"{API}/threads/{threads['u1'].thread_id}/",
            {"metadata": {"topic": "x"}},
            format="json",
        )
        # then
        assert response.status_code == 200, response.json()
        assert response.json()["metadata"] == {"userId": "u1", "topic": "x"}

    def test_may_not_upsert_another_users_thread_by_id(self, restricted: APIClient, threads):
        # given
        before = snapshot_rows()
        # when
        response = restricted.post(
            f"{API}/threads/",
            {
                "id": threads["u2"].thread_id,
                "agent_id": "agent-a",
                "metadata": {"userId": "u1"},
            },
            format="json",
        )
        # then
        assert_error(response, 409, "thread_id_unavailable")
        assert snapshot_rows() == before

    def test_an_api_key_grant_is_limited_the_same_way(self, make_api_key: MakeKey, threads):
        # given
        _api_key, key = make_api_key("desk-u2", {"agent-a": ["u2"]})
        # when
        response = api_key_client(key).get(f"{API}/threads/")
        # then
        assert listed_ids(response) == {threads["u2"].thread_id}


# --- throttling ------------------------------------------------------------------------


@pytest.fixture
def three_per_minute() -> Iterator[None]:
    rest_framework = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"memory": "3/minute"}}
    with override_settings(REST_FRAMEWORK=rest_framework):
        yield


def test_the_fourth_request_of_a_principal_in_a_minute_is_429(
    three_per_minute: None, ana: Principal, conversation: Conversation
):
    # given three requests to different endpoints
    for path in ("threads/", f"threads/{conversation.thread_id}/", "threads/no-such-thread/"):
        assert ana.client.get(f"{API}/{path}").status_code in (200, 404)
    # when
    response = ana.client.get(f"{API}/threads/")
    # then
    body = assert_error(response, 429, "throttled")
    assert body["message"].startswith("Request was throttled.")
    assert 0 < int(response.headers["Retry-After"]) <= 60


def test_a_throttled_write_changes_nothing(
    three_per_minute: None, ana: Principal, conversation: Conversation
):
    # given
    for _ in range(3):
        ana.client.get(f"{API}/threads/")
    before = snapshot_rows()
    # when
    response = ana.client.delete(f"{API}/threads/{conversation.thread_id}/")
    # then
    assert_error(response, 429, "throttled")
    assert snapshot_rows() == before


def test_a_throttled_principal_does_not_hold_up_another(
    three_per_minute: None, ana: Principal, service_b: Principal
):
    # given ana used up her requests
    for _ in range(4):
        ana.client.get(f"{API}/threads/")
    # when
    response = service_b.client.get(f"{API}/threads/")
    # then
    assert response.status_code == 200


def test_two_clients_of_one_user_share_the_users_count(three_per_minute: None, ana: Principal):
    # given a second way in for the same user: a session beside the token
    session = APIClient()
    session.force_login(ana.user)
    for _ in range(3):
        ana.client.get(f"{API}/threads/")
    # when
    response = session.get(f"{API}/threads/")
    # then
    assert_error(response, 429, "throttled")


def test_the_projects_rate_lets_more_than_three_through(ana: Principal):
    # when
    statuses = [ana.client.get(f"{API}/threads/").status_code for _ in range(5)]
    # then
    assert statuses == [200] * 5
