"""The channel sessions API: get-or-create by key (201 new, 200 existing), the list with and
without a user, page by page, one session, and grants."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from cogitator_memory.sessions.models import ChannelSession
from cogitator_memory.sessions.services import SessionManager
from cogitator_memory.threads.models import Thread
from tests.api.conftest import API, assert_error, token_client

pytestmark = pytest.mark.django_db

SESSIONS = f"{API}/sessions/"
KEY = {"user_id": "u1", "channel_type": "telegram", "channel_id": "chat-42", "agent_id": "agent-a"}


@pytest.fixture
def client(make_user: Callable[..., User]) -> APIClient:
    return token_client(make_user("ana", {"agent-a": None}))


def test_post_creates_the_session_then_finds_it(client: APIClient):
    # when
    first = client.post(SESSIONS, KEY, format="json")
    again = client.post(SESSIONS, KEY, format="json")
    # then
    assert (first.status_code, again.status_code) == (201, 200)
    body = first.json()
    assert again.json()["id"] == body["id"]
    assert {k: body[k] for k in KEY} == KEY
    assert body["status"] == "active"
    assert set(body) == {*KEY, "id", "thread_id", "status", "last_active_at", "created_at"}
    thread = client.get(f"{API}/threads/{body['thread_id']}/").json()
    assert thread["metadata"]["userId"] == "u1"
    assert ChannelSession.objects.count() == 1 and Thread.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**KEY, "user_id": ""}, "user_id"),
        ({**KEY, "channel_type": "  "}, "channel_type"),
        ({**KEY, "channel_id": "a\x00b"}, "channel_id"),
        ({**KEY, "agent_id": 7}, "agent_id"),
        ({k: v for k, v in KEY.items() if k != "channel_id"}, "channel_id"),
    ],
)
def test_a_bad_key_is_a_400_naming_the_field(client: APIClient, body: dict[str, Any], field: str):
    # when
    response = client.post(SESSIONS, body, format="json")
    # then
    assert_error(response, 400, "invalid", fields=[field])
    assert not ChannelSession.objects.exists()


def test_a_key_outside_the_grants_is_a_403(client: APIClient):
    # when
    response = client.post(SESSIONS, {**KEY, "agent_id": "agent-b"}, format="json")
    # then
    assert_error(response, 403, "permission_denied")
    assert not ChannelSession.objects.exists() and not Thread.objects.exists()


def test_the_list_with_and_without_a_user_page_by_page(client: APIClient):
    # given
    for user in ("u1", "u2"):
        for number in range(3):
            client.post(SESSIONS, {**KEY, "user_id": user, "channel_id": f"c{number}"}, "json")
    SessionManager().get_or_create("u9", "web", "c", "agent-b")  # not granted
    seen: list[str] = []
    url: str | None = f"{SESSIONS}?limit=4"
    # when
    while url:
        page = client.get(url).json()
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    only_u1 = client.get(f"{SESSIONS}?user_id=u1").json()["results"]
    # then
    assert len(seen) == len(set(seen)) == 6
    assert {row["user_id"] for row in only_u1} == {"u1"} and len(only_u1) == 3
    assert client.get(f"{SESSIONS}?agent_id=agent-b").json()["results"] == []
    assert len(client.get(f"{SESSIONS}?status=active").json()["results"]) == 6
    assert client.get(f"{SESSIONS}?status=closed").json()["results"] == []


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=x", "cursor=nope", "status=gone", "user_id=", "agent_id=%00"]
)
def test_a_bad_list_query_is_a_400(client: APIClient, query: str):
    assert_error(client.get(f"{SESSIONS}?{query}"), 400, "invalid", fields=[query.split("=")[0]])


def test_detail_within_the_grants(client: APIClient):
    # given
    mine = client.post(SESSIONS, KEY, format="json").json()
    theirs, _ = SessionManager().get_or_create("u1", "telegram", "chat-42", "agent-b")
    # when
    found = client.get(f"{SESSIONS}{mine['id']}/")
    hidden = client.get(f"{SESSIONS}{theirs.pk}/")
    missing = client.get(f"{SESSIONS}sess_missing/")
    # then
    assert found.status_code == 200 and found.json() == {
        **mine,
        "last_active_at": found.json()["last_active_at"],
    }
    assert_error(hidden, 404, "session_not_found")
    assert_error(missing, 404, "session_not_found")
    assert hidden.json()["message"].replace(theirs.pk, "x") == missing.json()["message"].replace(
        "sess_missing", "x"
    )


def test_a_grant_naming_users_sees_only_their_sessions(make_user: Callable[..., User]):
    # given
    desk = token_client(make_user("desk", {"agent-a": ["u1"]}))
    SessionManager().get_or_create("u2", "web", "c", "agent-a")
    # when
    created = desk.post(SESSIONS, KEY, format="json")
    refused = desk.post(SESSIONS, {**KEY, "user_id": "u2"}, format="json")
    listed = desk.get(SESSIONS).json()["results"]
    # then
    assert created.status_code == 201
    assert_error(refused, 403, "permission_denied")
    assert [row["id"] for row in listed] == [created.json()["id"]]
