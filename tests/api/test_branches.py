"""Branches over HTTP: read one branch, rewind, checkout, fork."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from cogitator_memory.threads import services
from cogitator_memory.threads.models import FORK_OF_KEY, FORKED_FROM_KEY, FORKS_KEY, Entry, Thread
from tests.api.conftest import (
    API,
    Conversation,
    assert_error,
    snapshot_rows,
    without_ids,
)

pytestmark = pytest.mark.django_db


def thread_action_url(thread_id: str, action: str) -> str:
    return f"{API}/threads/{thread_id}/{action}/"


def result_ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [entry["id"] for entry in response.json()["results"]]


def active_leaf(conversation: Conversation) -> str | None:
    return Thread.objects.get(pk=conversation.thread_id).active_leaf_id


# --- path ------------------------------------------------------------------------------


def test_path_gives_the_active_branch_oldest_first(client: APIClient, conversation: Conversation):
    # when
    response = client.get(thread_action_url(conversation.thread_id, "path"))
    # then
    c = conversation
    assert result_ids(response) == [c.root.pk, c.reply.pk, c.follow_up.pk]
    assert response.json()["next_before"] is None


def test_path_to_another_leaf_gives_that_branch(client: APIClient, conversation: Conversation):
    # when
    url = thread_action_url(conversation.thread_id, "path")
    response = client.get(f"{url}?leaf_id={conversation.retry.pk}")
    # then
    assert result_ids(response) == [conversation.root.pk, conversation.retry.pk]


def test_path_with_types_all_includes_events(client: APIClient, conversation: Conversation):
    # when
    url = thread_action_url(conversation.thread_id, "path")
    response = client.get(f"{url}?leaf_id={conversation.label.pk}&types=all")
    # then
    assert result_ids(response)[-1] == conversation.label.pk
    assert len(result_ids(response)) == 4


def test_path_pages_back_with_next_before(client: APIClient, conversation: Conversation):
    # given
    url = thread_action_url(conversation.thread_id, "path")
    # when
    first = client.get(f"{url}?limit=2")
    second = client.get(f"{url}?limit=2&before={first.json()['next_before']}")
    # then
    c = conversation
    assert result_ids(first) == [c.reply.pk, c.follow_up.pk]
    assert first.json()["next_before"] == c.reply.pk
    assert result_ids(second) == [c.root.pk]
    assert second.json()["next_before"] is None


def test_path_leaves_out_tool_calls_unless_asked(client: APIClient, conversation: Conversation):
    # given
    services.add_entry(
        conversation.thread_id,
        role="assistant",
        content="",
        tool_calls=[{"id": "call-1", "name": "track"}],
    )
    url = thread_action_url(conversation.thread_id, "path") + "?limit=1"
    # when
    plain = client.get(url)
    full = client.get(url + "&include_tool_calls=true")
    # then
    assert "tool_calls" not in plain.json()["results"][0]
    assert full.json()["results"][0]["tool_calls"] == [{"id": "call-1", "name": "track"}]


@pytest.mark.parametrize(
    ("query", "code", "field"),
    [
        ("leaf_id=no-such-entry", "entry_not_in_thread", "leaf_id"),
        ("before=no-such-entry", "entry_not_in_thread", "before"),
        ("leaf_id=" + "e" * 65, "invalid", "leaf_id"),
        ("limit=0", "invalid", "limit"),
        ("limit=501", "invalid", "limit"),
        ("limit=all", "invalid", "limit"),
        ("types=bogus", "invalid", "types"),
        ("include_tool_calls=perhaps", "invalid", "include_tool_calls"),
    ],
)
def test_path_refuses_a_bad_query_parameter(
    client: APIClient, conversation: Conversation, query, code, field
):
    # when
    response = client.get(thread_action_url(conversation.thread_id, "path") + f"?{query}")
    # then
    assert_error(response, 404 if code == "entry_not_in_thread" else 400, code, [field])


def test_path_to_a_leaf_of_another_principal_is_the_same_404_as_a_missing_entry(
    client: APIClient, conversation: Conversation, foreign_conversation: Conversation
):
    # given
    url = thread_action_url(conversation.thread_id, "path")
    foreign_entry = foreign_conversation.follow_up.pk
    # when
    foreign = client.get(f"{url}?leaf_id={foreign_entry}")
    missing = client.get(f"{url}?leaf_id=no-such-entry")
    # then: the foreign entry is not named as anything but an id
    assert_error(foreign, 404, "entry_not_in_thread", ["leaf_id"])
    assert foreign_conversation.root.content not in str(foreign.json())
    assert without_ids(foreign.json(), {foreign_entry: "ID"}) == without_ids(
        missing.json(), {"no-such-entry": "ID"}
    )


def test_path_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.get(thread_action_url("no-such-thread", "path"))
    # then
    assert_error(response, 404, "thread_not_found")


def test_path_of_another_principals_thread_is_the_same_404_as_a_missing_one(
    client: APIClient, foreign_conversation: Conversation
):
    # when
    foreign = client.get(thread_action_url(foreign_conversation.thread_id, "path"))
    missing = client.get(thread_action_url("no-such-thread", "path"))
    # then
    assert_error(foreign, 404, "thread_not_found")
    assert without_ids(foreign.json(), {foreign_conversation.thread_id: "ID"}) == without_ids(
        missing.json(), {"no-such-thread": "ID"}
    )


# --- rewind ----------------------------------------------------------------------------


def test_rewind_moves_the_active_leaf_back_and_deletes_nothing(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "rewind"),
        {"to_entry_id": conversation.reply.pk},
        format="json",
    )
    # then
    assert response.status_code == 200, response.json()
    assert response.json()["active_leaf_id"] == conversation.reply.pk
    assert active_leaf(conversation) == conversation.reply.pk
    assert Entry.objects.filter(thread_id=conversation.thread_id).count() == 5


def test_rewind_to_the_active_leaf_changes_nothing(client: APIClient, conversation: Conversation):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "rewind"),
        {"to_entry_id": conversation.follow_up.pk},
        format="json",
    )
    # then
    assert response.status_code == 200, response.json()
    assert snapshot_rows() == before


def test_rewind_to_another_branch_is_a_conflict_and_changes_nothing(
    client: APIClient, conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "rewind"),
        {"to_entry_id": conversation.retry.pk},
        format="json",
    )
    # then
    body = assert_error(response, 409, "not_on_active_branch")
    assert body["message"] == (
        f"Entry {conversation.retry.pk!r} is not on the active branch of thread "
        f"{conversation.thread_id!r}; rewind goes back along the active branch, "
        "checkout switches branches."
    )
    assert snapshot_rows() == before


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({}, "invalid"),
        ({"to_entry_id": None}, "invalid"),
        ({"to_entry_id": "e" * 65}, "invalid"),
        ({"to_entry_id": "no-such-entry"}, "entry_not_in_thread"),
    ],
)
def test_rewind_refuses_a_bad_target_and_changes_nothing(
    client: APIClient, conversation: Conversation, payload, code
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "rewind"), payload, format="json"
    )
    # then
    assert_error(response, 404 if code == "entry_not_in_thread" else 400, code, ["to_entry_id"])
    assert snapshot_rows() == before


def test_rewind_to_an_entry_of_another_principal_is_refused_as_not_in_thread(
    client: APIClient, conversation: Conversation, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "rewind"),
        {"to_entry_id": foreign_conversation.root.pk},
        format="json",
    )
    # then
    assert_error(response, 404, "entry_not_in_thread", ["to_entry_id"])
    assert snapshot_rows() == before


def test_rewind_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.post(
        thread_action_url("no-such-thread", "rewind"), {"to_entry_id": "x"}, format="json"
    )
    # then
    assert_error(response, 404, "thread_not_found")


def test_rewind_of_another_principals_thread_is_404_and_changes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(foreign_conversation.thread_id, "rewind"),
        {"to_entry_id": foreign_conversation.root.pk},
        format="json",
    )
    # then
    assert_error(response, 404, "thread_not_found")
    assert snapshot_rows() == before


# --- checkout --------------------------------------------------------------------------


def test_checkout_makes_another_branch_active(client: APIClient, conversation: Conversation):
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "checkout"),
        {"entry_id": conversation.retry.pk},
        format="json",
    )
    # then
    assert response.status_code == 200, response.json()
    assert response.json()["active_leaf_id"] == conversation.retry.pk
    assert active_leaf(conversation) == conversation.retry.pk


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({}, "invalid"),
        ({"entry_id": 7}, "invalid"),
        ({"entry_id": ""}, "invalid"),
        ({"entry_id": "no-such-entry"}, "entry_not_in_thread"),
    ],
)
def test_checkout_refuses_a_bad_target_and_changes_nothing(
    client: APIClient, conversation: Conversation, payload, code
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "checkout"), payload, format="json"
    )
    # then
    assert_error(response, 404 if code == "entry_not_in_thread" else 400, code, ["entry_id"])
    assert snapshot_rows() == before


def test_checkout_of_an_entry_of_another_principal_is_refused_as_not_in_thread(
    client: APIClient, conversation: Conversation, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "checkout"),
        {"entry_id": foreign_conversation.retry.pk},
        format="json",
    )
    # then
    assert_error(response, 404, "entry_not_in_thread", ["entry_id"])
    assert snapshot_rows() == before


def test_checkout_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.post(
        thread_action_url("no-such-thread", "checkout"), {"entry_id": "x"}, format="json"
    )
    # then
    assert_error(response, 404, "thread_not_found")


def test_checkout_on_another_principals_thread_is_404_and_changes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(foreign_conversation.thread_id, "checkout"),
        {"entry_id": foreign_conversation.retry.pk},
        format="json",
    )
    # then
    assert_error(response, 404, "thread_not_found")
    assert snapshot_rows() == before


# --- fork ------------------------------------------------------------------------------


def test_fork_copies_the_branch_into_a_new_thread(client: APIClient, conversation: Conversation):
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "fork"),
        {"at_entry_id": conversation.reply.pk},
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    fork = Thread.objects.get(pk=response.json()["id"])
    assert fork.agent_id == "agent-a"
    assert fork.metadata == {
        "userId": "u1",
        "topic": "parcel",
        FORKED_FROM_KEY: {"threadId": conversation.thread_id, "entryId": conversation.reply.pk},
    }
    copies = list(Entry.objects.filter(thread=fork).order_by("seq"))
    assert [c.metadata[FORK_OF_KEY] for c in copies] == [
        conversation.root.pk,
        conversation.reply.pk,
    ]
    assert response.json()["active_leaf_id"] == copies[-1].pk
    origin = Thread.objects.get(pk=conversation.thread_id)
    assert origin.metadata[FORKS_KEY] == [fork.pk]


def test_fork_into_a_chosen_id(client: APIClient, conversation: Conversation):
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "fork"),
        {"at_entry_id": conversation.root.pk, "new_thread_id": "parcel-retry"},
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    assert response.json()["id"] == "parcel-retry"
    assert Entry.objects.filter(thread_id="parcel-retry").count() == 1


def test_fork_into_a_taken_id_is_a_conflict_and_writes_nothing(
    client: APIClient, conversation: Conversation
):
    # given
    services.create_thread("agent-a", thread_id="taken")
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "fork"),
        {"at_entry_id": conversation.root.pk, "new_thread_id": "taken"},
        format="json",
    )
    # then
    body = assert_error(response, 409, "thread_exists")
    assert body["message"] == "Thread 'taken' already exists."
    assert snapshot_rows() == before


@pytest.mark.parametrize(
    ("payload", "code", "fields"),
    [
        ({}, "invalid", ["at_entry_id"]),
        ({"at_entry_id": "no-such-entry"}, "entry_not_in_thread", ["at_entry_id"]),
        ({"at_entry_id": "x", "new_thread_id": "no spaces"}, "invalid", ["new_thread_id"]),
        ({"new_thread_id": "_leading"}, "invalid", ["at_entry_id", "new_thread_id"]),
    ],
)
def test_fork_refuses_bad_fields_and_writes_nothing(
    client: APIClient, conversation: Conversation, payload, code, fields
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "fork"), payload, format="json"
    )
    # then
    assert_error(response, 404 if code == "entry_not_in_thread" else 400, code, fields)
    assert snapshot_rows() == before


def test_fork_at_an_entry_of_another_principal_is_refused_as_not_in_thread(
    client: APIClient, conversation: Conversation, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(conversation.thread_id, "fork"),
        {"at_entry_id": foreign_conversation.reply.pk},
        format="json",
    )
    # then
    assert_error(response, 404, "entry_not_in_thread", ["at_entry_id"])
    assert snapshot_rows() == before


def test_fork_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.post(
        thread_action_url("no-such-thread", "fork"), {"at_entry_id": "x"}, format="json"
    )
    # then
    assert_error(response, 404, "thread_not_found")


def test_fork_of_another_principals_thread_is_404_and_writes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        thread_action_url(foreign_conversation.thread_id, "fork"),
        {"at_entry_id": foreign_conversation.reply.pk},
        format="json",
    )
    # then
    assert_error(response, 404, "thread_not_found")
    assert snapshot_rows() == before
