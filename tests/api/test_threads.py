"""Threads over HTTP: list, create or upsert, read, update metadata, delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from rest_framework.test import APIClient

from cogitator_memory.threads import services
from cogitator_memory.threads.models import Entry, Thread
from tests.api.conftest import (
    API,
    Conversation,
    Principal,
    assert_error,
    row_counts,
    snapshot_rows,
    token_client,
    without_ids,
)

pytestmark = pytest.mark.django_db

MOMENT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def thread_url(thread_id: str) -> str:
    return f"{API}/threads/{thread_id}/"


def listed_ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [thread["id"] for thread in response.json()["results"]]


def make_thread(agent_id: str, metadata: dict[str, Any], updated_at: datetime) -> Thread:
    thread = services.create_thread(agent_id, metadata)
    Thread.objects.filter(pk=thread.pk).update(updated_at=updated_at)
    return thread


@pytest.fixture
def three_threads() -> list[Thread]:
    """Three threads of agent-a, an hour apart, oldest first, and one of agent-b."""
    make_thread("agent-b", {"userId": "u1"}, MOMENT + timedelta(hours=5))
    return [
        make_thread("agent-a", {"userId": "u1", "tier": 1}, MOMENT),
        make_thread("agent-a", {"userId": "u2", "tier": 2}, MOMENT + timedelta(hours=1)),
        make_thread("agent-a", {"userId": "u1", "tier": "2"}, MOMENT + timedelta(hours=2)),
    ]


# --- list ------------------------------------------------------------------------------


def test_list_gives_the_callers_threads_newest_first(client: APIClient, three_threads):
    # when
    response = client.get(f"{API}/threads/")
    # then: agent-b's thread is not among them
    assert listed_ids(response) == [t.pk for t in reversed(three_threads)]
    assert response.json()["next_cursor"] is None
    assert response.json()["next"] is None


def test_list_item_has_the_documented_fields(client: APIClient, conversation: Conversation):
    # when
    response = client.get(f"{API}/threads/")
    # then
    (item,) = response.json()["results"]
    assert item == {
        "id": conversation.thread_id,
        "agent_id": "agent-a",
        "metadata": {"userId": "u1", "topic": "parcel"},
        "active_leaf_id": conversation.follow_up.pk,
        "created_at": item["created_at"],
        "updated_at": item["updated_at"],
    }
    assert datetime.fromisoformat(item["updated_at"]) == conversation.thread.updated_at


def test_list_pages_with_next_cursor_and_next_url(client: APIClient, three_threads):
    # when
    first = client.get(f"{API}/threads/?limit=2")
    second = client.get(f"{API}/threads/?limit=2&cursor={first.json()['next_cursor']}")
    # then
    assert listed_ids(first) == [three_threads[2].pk, three_threads[1].pk]
    next_query = parse_qs(urlsplit(first.json()["next"]).query)
    assert next_query == {"cursor": [first.json()["next_cursor"]], "limit": ["2"]}
    assert listed_ids(second) == [three_threads[0].pk]
    assert second.json()["next_cursor"] is None


def test_list_next_url_gives_the_next_page(client: APIClient, three_threads):
    # given
    first = client.get(f"{API}/threads/?limit=1")
    # when
    second = client.get(first.json()["next"])
    # then
    assert listed_ids(second) == [three_threads[1].pk]


def test_list_filters_by_agent_within_the_callers_agents(client: APIClient, three_threads):
    # when
    own = client.get(f"{API}/threads/?agent_id=agent-a")
    foreign = client.get(f"{API}/threads/?agent_id=agent-b")
    # then
    assert len(listed_ids(own)) == 3
    assert listed_ids(foreign) == []


def test_list_filters_by_metadata_value_and_json_type(client: APIClient, three_threads):
    # when: tier 2 the number, not "2" the text
    response = client.get(f"{API}/threads/?metadata=" + quote('{"tier": 2}'))
    # then
    assert listed_ids(response) == [three_threads[1].pk]


def test_list_filters_by_several_metadata_keys(client: APIClient, three_threads):
    # when
    response = client.get(f"{API}/threads/?metadata=" + quote('{"userId": "u1", "tier": "2"}'))
    # then
    assert listed_ids(response) == [three_threads[2].pk]


def test_list_filters_by_updated_after_and_before(client: APIClient, three_threads):
    # when: strictly between the first and the third
    after = quote(MOMENT.isoformat())
    before = quote((MOMENT + timedelta(hours=2)).isoformat())
    response = client.get(f"{API}/threads/?updated_after={after}&updated_before={before}")
    # then
    assert listed_ids(response) == [three_threads[1].pk]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("limit=ten", "limit"),
        ("cursor=not-a-cursor", "cursor"),
        ("metadata=" + quote("{not json"), "metadata"),
        ("metadata=" + quote('["userId"]'), "metadata"),
        ("metadata=" + quote('{"user id": "u1"}'), "metadata"),
        ("metadata=" + quote('{"userId": ["u1"]}'), "metadata"),
        ("updated_after=yesterday", "updated_after"),
        ("updated_before=2025-13-01T00:00:00Z", "updated_before"),
        ("agent_id=" + "a" * 256, "agent_id"),
    ],
)
def test_list_refuses_a_bad_query_parameter(client: APIClient, three_threads, query, field):
    # when
    response = client.get(f"{API}/threads/?{query}")
    # then
    assert_error(response, 400, "invalid", [field])


def test_list_limit_error_names_the_bounds(client: APIClient):
    # when
    response = client.get(f"{API}/threads/?limit=501")
    # then
    body = assert_error(response, 400, "invalid", ["limit"])
    assert body["errors"]["limit"] == ["limit must be a whole number from 1 to 500."]


# --- create ----------------------------------------------------------------------------


def test_create_makes_a_thread_with_a_generated_id(client: APIClient):
    # when
    response = client.post(
        f"{API}/threads/", {"agent_id": "agent-a", "metadata": {"userId": "u1"}}, format="json"
    )
    # then
    assert response.status_code == 201, response.json()
    body = response.json()
    thread = Thread.objects.get(pk=body["id"])
    assert thread.agent_id == "agent-a"
    assert thread.metadata == {"userId": "u1"}
    assert body["active_leaf_id"] is None
    assert body["metadata"] == {"userId": "u1"}


def test_create_without_metadata_stores_an_empty_object(client: APIClient):
    # when
    response = client.post(f"{API}/threads/", {"agent_id": "agent-a"}, format="json")
    # then
    assert response.status_code == 201
    assert Thread.objects.get(pk=response.json()["id"]).metadata == {}


def test_create_with_a_new_explicit_id_answers_201(client: APIClient):
    # when
    response = client.post(
        f"{API}/threads/", {"id": "support:ticket-7", "agent_id": "agent-a"}, format="json"
    )
    # then
    assert response.status_code == 201
    assert response.json()["id"] == "support:ticket-7"
    assert Thread.objects.filter(pk="support:ticket-7", agent_id="agent-a").exists()


def test_create_with_the_id_of_a_visible_thread_upserts_and_answers_200(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        f"{API}/threads/",
        {"id": conversation.thread_id, "agent_id": "agent-a", "metadata": {"topic": "refund"}},
        format="json",
    )
    # then: metadata merged, entries and created_at kept
    assert response.status_code == 200, response.json()
    thread = Thread.objects.get(pk=conversation.thread_id)
    assert thread.metadata == {"userId": "u1", "topic": "refund"}
    assert thread.created_at == conversation.thread.created_at
    assert Entry.objects.filter(thread=thread).count() == 5


def test_create_refuses_an_agent_without_a_grant(client: APIClient):
    # when
    response = client.post(f"{API}/threads/", {"agent_id": "agent-b"}, format="json")
    # then
    body = assert_error(response, 403, "permission_denied")
    assert body["message"] == "You have no grant for agent 'agent-b'."
    assert not Thread.objects.exists()


def test_create_with_the_id_of_an_invisible_thread_is_a_conflict(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        f"{API}/threads/",
        {"id": foreign_conversation.thread_id, "agent_id": "agent-a", "metadata": {"x": 1}},
        format="json",
    )
    # then
    body = assert_error(response, 409, "thread_id_unavailable")
    assert body["message"] == (
        f"The thread id {foreign_conversation.thread_id!r} cannot be used; choose another."
    )
    assert snapshot_rows() == before


def test_upsert_naming_another_agent_of_the_caller_is_a_conflict(
    make_user, conversation: Conversation
):
    # given a user granted both agents
    client = token_client(make_user("both", {"agent-a": None, "agent-b": None}))
    # when
    response = client.post(
        f"{API}/threads/", {"id": conversation.thread_id, "agent_id": "agent-b"}, format="json"
    )
    # then
    body = assert_error(response, 409, "thread_agent_mismatch")
    assert body["message"] == (
        f"Thread {conversation.thread_id!r} belongs to agent 'agent-a', not 'agent-b'."
    )
    assert Thread.objects.get(pk=conversation.thread_id).agent_id == "agent-a"


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        ({}, ["agent_id"]),
        ({"agent_id": ""}, ["agent_id"]),
        ({"agent_id": "a" * 256}, ["agent_id"]),
        ({"agent_id": "agent-a", "id": "has space"}, ["id"]),
        ({"agent_id": "agent-a", "id": "-starts-with-dash"}, ["id"]),
        ({"agent_id": "agent-a", "id": "x" * 256}, ["id"]),
        ({"agent_id": "agent-a", "metadata": ["not", "an", "object"]}, ["metadata"]),
        ({"agent_id": "agent-a", "metadata": "text"}, ["metadata"]),
        ({"agent_id": ["agent-a"], "metadata": 3}, ["agent_id", "metadata"]),
    ],
)
def test_create_refuses_bad_fields_and_writes_nothing(client: APIClient, payload, fields):
    # given
    before = row_counts()
    # when
    response = client.post(f"{API}/threads/", payload, format="json")
    # then
    assert_error(response, 400, "invalid", fields)
    assert row_counts() == before


def test_create_refuses_a_body_that_is_not_an_object(client: APIClient):
    # when
    response = client.post(f"{API}/threads/", ["agent-a"], format="json")
    # then
    assert_error(response, 400, "invalid", ["non_field_errors"])
    assert not Thread.objects.exists()


# --- read ------------------------------------------------------------------------------


def test_read_gives_the_thread(client: APIClient, conversation: Conversation):
    # when
    response = client.get(thread_url(conversation.thread_id))
    # then
    assert response.status_code == 200
    assert response.json()["id"] == conversation.thread_id
    assert response.json()["active_leaf_id"] == conversation.follow_up.pk


def test_read_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.get(thread_url("no-such-thread"))
    # then
    body = assert_error(response, 404, "thread_not_found")
    assert body["message"] == "Thread not found: 'no-such-thread'"


def test_read_of_another_principals_thread_is_the_same_404_as_a_missing_one(
    client: APIClient, foreign_conversation: Conversation
):
    # when
    foreign = client.get(thread_url(foreign_conversation.thread_id))
    missing = client.get(thread_url("no-such-thread"))
    # then
    assert_error(foreign, 404, "thread_not_found")
    assert without_ids(foreign.json(), {foreign_conversation.thread_id: "ID"}) == without_ids(
        missing.json(), {"no-such-thread": "ID"}
    )


# --- update ----------------------------------------------------------------------------


def test_patch_merges_metadata(client: APIClient, conversation: Conversation):
    # when
    response = client.patch(
        thread_url(conversation.thread_id), {"metadata": {"topic": "refund"}}, format="json"
    )
    # then
    assert response.status_code == 200, response.json()
    assert response.json()["metadata"] == {"userId": "u1", "topic": "refund"}
    assert Thread.objects.get(pk=conversation.thread_id).metadata == {
        "userId": "u1",
        "topic": "refund",
    }


def test_patch_with_replace_replaces_metadata(client: APIClient, conversation: Conversation):
    # when
    response = client.patch(
        thread_url(conversation.thread_id),
        {"metadata": {"lang": "de"}, "replace": True},
        format="json",
    )
    # then
    assert response.status_code == 200, response.json()
    assert Thread.objects.get(pk=conversation.thread_id).metadata == {"lang": "de"}


def test_patch_moves_updated_at(client: APIClient, conversation: Conversation):
    # when
    response = client.patch(
        thread_url(conversation.thread_id), {"metadata": {"n": 1}}, format="json"
    )
    # then
    assert response.status_code == 200
    assert Thread.objects.get(pk=conversation.thread_id).updated_at > (
        conversation.thread.updated_at
    )


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        ({}, ["metadata"]),
        ({"metadata": None}, ["metadata"]),
        ({"metadata": [1]}, ["metadata"]),
        ({"metadata": {"a": 1}, "replace": "sometimes"}, ["replace"]),
    ],
)
def test_patch_refuses_bad_fields_and_changes_nothing(
    client: APIClient, conversation: Conversation, payload, fields
):
    # given
    before = snapshot_rows()
    # when
    response = client.patch(thread_url(conversation.thread_id), payload, format="json")
    # then
    assert_error(response, 400, "invalid", fields)
    assert snapshot_rows() == before


def test_patch_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.patch(thread_url("no-such-thread"), {"metadata": {}}, format="json")
    # then
    assert_error(response, 404, "thread_not_found")


def test_patch_of_another_principals_thread_is_404_and_changes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.patch(
        thread_url(foreign_conversation.thread_id), {"metadata": {"x": 1}}, format="json"
    )
    # then
    assert_error(response, 404, "thread_not_found")
    assert snapshot_rows() == before


# --- delete ----------------------------------------------------------------------------


def test_delete_removes_the_thread_and_its_entries(client: APIClient, conversation: Conversation):
    # when
    response = client.delete(thread_url(conversation.thread_id))
    # then: the answer counts what went
    assert response.status_code == 200
    report = response.json()["report"]
    assert (report["threads"], report["entries"]["deleted"]) == (1, len(conversation.entry_ids))
    assert not Thread.objects.filter(pk=conversation.thread_id).exists()
    assert not Entry.objects.filter(pk__in=conversation.entry_ids).exists()


def test_delete_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.delete(thread_url("no-such-thread"))
    # then
    assert_error(response, 404, "thread_not_found")


def test_delete_of_another_principals_thread_is_404_and_deletes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.delete(thread_url(foreign_conversation.thread_id))
    # then
    assert_error(response, 404, "thread_not_found")
    assert snapshot_rows() == before


def test_the_other_principal_still_reads_its_thread_after_refused_attempts(
    client: APIClient, service_b: Principal, foreign_conversation: Conversation
):
    # given ana tried to change and delete service-b's thread
    client.patch(thread_url(foreign_conversation.thread_id), {"metadata": {}}, format="json")
    client.delete(thread_url(foreign_conversation.thread_id))
    # when
    response = service_b.client.get(thread_url(foreign_conversation.thread_id))
    # then
    assert response.status_code == 200
    assert response.json()["metadata"] == {"userId": "u9", "topic": "invoice"}
