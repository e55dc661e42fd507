"""Entries over HTTP: a thread's entries (list, add), one entry (read, delete), redaction."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from cogitator_memory.threads import services
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread
from tests.api.conftest import (
    API,
    Conversation,
    assert_error,
    snapshot_rows,
    without_ids,
)

pytestmark = pytest.mark.django_db


def entries_url(thread_id: str) -> str:
    return f"{API}/threads/{thread_id}/entries/"


def entry_url(entry_id: str) -> str:
    return f"{API}/entries/{entry_id}/"


def result_ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [entry["id"] for entry in response.json()["results"]]


def add_tool_call(conversation: Conversation) -> Entry:
    return services.add_entry(
        conversation.thread_id,
        role="assistant",
        content="",
        tool_calls=[{"id": "call-1", "name": "track", "arguments": {"parcel": "P-1"}}],
    )


# --- list ------------------------------------------------------------------------------


def test_list_gives_messages_of_every_branch_oldest_first(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.get(entries_url(conversation.thread_id))
    # then: the label event is left out by default
    c = conversation
    assert result_ids(response) == [c.root.pk, c.reply.pk, c.follow_up.pk, c.retry.pk]
    assert response.json()["next_cursor"] is None


def test_list_entry_has_the_documented_fields_and_omits_unset_ones(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.get(entries_url(conversation.thread_id) + "?limit=1")
    # then
    (entry,) = response.json()["results"]
    assert entry == {
        "id": conversation.retry.pk,
        "thread_id": conversation.thread_id,
        "parent_id": conversation.root.pk,
        "seq": 4,
        "type": "message",
        "token_count": conversation.retry.token_count,
        "created_at": entry["created_at"],
        "role": "assistant",
        "content": "Let me check.",
    }
    assert datetime.fromisoformat(entry["created_at"]) == conversation.retry.created_at


def test_list_with_types_all_includes_events(client: APIClient, conversation: Conversation):
    # when
    response = client.get(entries_url(conversation.thread_id) + "?types=all")
    # then
    assert result_ids(response)[-1] == conversation.label.pk
    assert len(result_ids(response)) == 5


def test_list_with_a_list_of_types_gives_only_those(client: APIClient, conversation: Conversation):
    # when
    response = client.get(entries_url(conversation.thread_id) + "?types=label")
    # then
    assert result_ids(response) == [conversation.label.pk]
    assert response.json()["results"][0]["event"] == {"label": "parcel"}


def test_list_pages_back_with_next_cursor(client: APIClient, conversation: Conversation):
    # when
    first = client.get(entries_url(conversation.thread_id) + "?limit=3")
    cursor = first.json()["next_cursor"]
    second = client.get(entries_url(conversation.thread_id) + f"?limit=3&cursor={cursor}")
    # then: the newest three, then the one older than them
    c = conversation
    assert result_ids(first) == [c.reply.pk, c.follow_up.pk, c.retry.pk]
    assert result_ids(second) == [c.root.pk]
    assert second.json()["next_cursor"] is None


def test_list_bounds_created_at_with_before_and_after(
    client: APIClient, conversation: Conversation
):
    # given
    c = conversation
    after = quote(c.root.created_at.isoformat())
    before = quote(c.retry.created_at.isoformat())
    # when
    response = client.get(entries_url(c.thread_id) + f"?after={after}&before={before}")
    # then: both bounds are strict
    assert result_ids(response) == [c.reply.pk, c.follow_up.pk]


def test_list_leaves_out_tool_calls_unless_asked(client: APIClient, conversation: Conversation):
    # given
    call = add_tool_call(conversation)
    url = entries_url(conversation.thread_id) + "?limit=1"
    # when
    plain = client.get(url)
    full = client.get(url + "&include_tool_calls=true")
    # then
    assert plain.json()["results"][0]["id"] == call.pk
    assert "tool_calls" not in plain.json()["results"][0]
    assert full.json()["results"][0]["tool_calls"] == [
        {"id": "call-1", "name": "track", "arguments": {"parcel": "P-1"}}
    ]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("types=bogus", "types"),
        ("types=message,all", "types"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("limit=many", "limit"),
        ("before=soon", "before"),
        ("after=2025-02-30T00:00:00Z", "after"),
        ("include_tool_calls=perhaps", "include_tool_calls"),
        ("cursor=bm90IGEgY3Vyc29y", "cursor"),
    ],
)
def test_list_refuses_a_bad_query_parameter(
    client: APIClient, conversation: Conversation, query, field
):
    # when
    response = client.get(entries_url(conversation.thread_id) + f"?{query}")
    # then
    assert_error(response, 400, "invalid", [field])


def test_list_of_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.get(entries_url("no-such-thread"))
    # then
    body = assert_error(response, 404, "thread_not_found")
    assert body["message"] == "Thread not found: 'no-such-thread'"


def test_list_of_another_principals_thread_is_the_same_404_as_a_missing_one(
    client: APIClient, foreign_conversation: Conversation
):
    # when
    foreign = client.get(entries_url(foreign_conversation.thread_id))
    missing = client.get(entries_url("no-such-thread"))
    # then
    assert_error(foreign, 404, "thread_not_found")
    assert without_ids(foreign.json(), {foreign_conversation.thread_id: "ID"}) == without_ids(
        missing.json(), {"no-such-thread": "ID"}
    )


# --- add -------------------------------------------------------------------------------


def test_add_puts_a_message_after_the_active_leaf_and_activates_it(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        entries_url(conversation.thread_id),
        {"role": "assistant", "content": "Tomorrow."},
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["parent_id"] == conversation.follow_up.pk
    assert body["seq"] == 6
    assert body["type"] == "message"
    assert body["content"] == "Tomorrow."
    assert Thread.objects.get(pk=conversation.thread_id).active_leaf_id == body["id"]


def test_add_with_parent_null_starts_a_new_root(client: APIClient, conversation: Conversation):
    # when
    response = client.post(
        entries_url(conversation.thread_id),
        {"role": "user", "content": "Start over.", "parent_id": None},
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    assert Entry.objects.get(pk=response.json()["id"]).parent_id is None


def test_add_on_another_branch_without_activating_keeps_the_leaf(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        entries_url(conversation.thread_id),
        {
            "role": "user",
            "content": "Thanks.",
            "parent_id": conversation.retry.pk,
            "activate": False,
        },
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    assert response.json()["parent_id"] == conversation.retry.pk
    assert Thread.objects.get(pk=conversation.thread_id).active_leaf_id == (
        conversation.follow_up.pk
    )


def test_add_a_tool_result_defaults_its_role_to_tool(client: APIClient, conversation: Conversation):
    # when
    response = client.post(
        entries_url(conversation.thread_id),
        {"type": "tool_result", "tool_call_id": "call-1", "content": "In transit."},
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    assert response.json()["role"] == "tool"
    assert response.json()["tool_call_id"] == "call-1"


def test_add_an_event_entry(client: APIClient, conversation: Conversation):
    # when
    response = client.post(
        entries_url(conversation.thread_id),
        {"type": "model_change", "event": {"from": "small", "to": "large"}},
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    assert response.json()["event"] == {"from": "small", "to": "large"}
    assert "content" not in response.json()


def test_add_keeps_a_given_token_count_and_created_at(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        entries_url(conversation.thread_id),
        {
            "role": "user",
            "content": [{"type": "text", "text": "Hi"}],
            "token_count": 42,
            "created_at": "2024-05-06T07:08:09Z",
            "metadata": {"channel": "mail"},
        },
        format="json",
    )
    # then
    assert response.status_code == 201, response.json()
    entry = Entry.objects.get(pk=response.json()["id"])
    assert entry.token_count == 42
    assert entry.created_at == datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    assert entry.content == [{"type": "text", "text": "Hi"}]
    assert entry.metadata == {"channel": "mail"}


@pytest.mark.parametrize(
    ("payload", "code", "fields"),
    [
        ({}, "invalid_entry", ["role", "content"]),
        ({"content": "hi"}, "invalid_entry", ["role"]),
        ({"role": "user"}, "invalid_entry", ["content"]),
        ({"role": "user", "content": {"text": "hi"}}, "invalid", ["content"]),
        ({"role": "user", "content": None}, "invalid", ["content"]),
        ({"type": "note", "role": "user", "content": "hi"}, "invalid", ["type"]),
        ({"role": "robot", "content": "hi"}, "invalid", ["role"]),
        ({"role": "user", "content": "hi", "token_count": -1}, "invalid", ["token_count"]),
        ({"role": "user", "content": "hi", "token_count": 2**31}, "invalid", ["token_count"]),
        ({"role": "user", "content": "hi", "created_at": "noon"}, "invalid", ["created_at"]),
        ({"role": "user", "content": "hi", "activate": "maybe"}, "invalid", ["activate"]),
        ({"role": "user", "content": "hi", "metadata": [1]}, "invalid", ["metadata"]),
        ({"role": "user", "content": "hi", "name": "n" * 256}, "invalid", ["name"]),
        ({"role": "user", "content": "hi", "parent_id": "e" * 65}, "invalid", ["parent_id"]),
        ({"role": "user", "content": "hi", "event": {"x": 1}}, "invalid_entry", ["event"]),
        ({"type": "label"}, "invalid_entry", ["event"]),
        ({"type": "tool_result"}, "invalid_entry", ["content"]),
        (
            {"role": "assistant", "tool_calls": [{"name": "track"}]},
            "invalid_entry",
            ["tool_calls"],
        ),
        ({"role": "assistant", "tool_calls": ["call"]}, "invalid", ["tool_calls.0"]),
        (
            {"role": "user", "content": "hi", "parent_id": "no-such-entry"},
            "entry_not_in_thread",
            ["parent_id"],
        ),
    ],
)
def test_add_refuses_bad_fields_and_writes_nothing(
    client: APIClient, conversation: Conversation, payload, code, fields
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(entries_url(conversation.thread_id), payload, format="json")
    # then
    assert_error(response, 404 if code == "entry_not_in_thread" else 400, code, fields)
    assert snapshot_rows() == before


def test_add_refuses_a_parent_from_another_thread(
    client: APIClient, conversation: Conversation, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    foreign_entry = foreign_conversation.reply.pk
    # when
    response = client.post(
        entries_url(conversation.thread_id),
        {"role": "user", "content": "hi", "parent_id": foreign_entry},
        format="json",
    )
    # then
    body = assert_error(response, 404, "entry_not_in_thread", ["parent_id"])
    assert body["errors"]["parent_id"] == [
        f"Entry {foreign_entry!r} is not an entry of thread {conversation.thread_id!r}."
    ]
    assert snapshot_rows() == before


def test_add_to_a_missing_thread_is_404(client: APIClient):
    # when
    response = client.post(
        entries_url("no-such-thread"), {"role": "user", "content": "hi"}, format="json"
    )
    # then
    assert_error(response, 404, "thread_not_found")


def test_add_to_another_principals_thread_is_404_and_writes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        entries_url(foreign_conversation.thread_id),
        {"role": "user", "content": "hi"},
        format="json",
    )
    # then
    assert_error(response, 404, "thread_not_found")
    assert snapshot_rows() == before


# --- one entry -------------------------------------------------------------------------


def test_read_gives_the_entry_with_its_tool_calls(client: APIClient, conversation: Conversation):
    # given
    call = add_tool_call(conversation)
    # when
    response = client.get(entry_url(call.pk))
    # then
    assert response.status_code == 200
    assert response.json()["id"] == call.pk
    assert response.json()["tool_calls"][0]["id"] == "call-1"


def test_read_of_a_missing_entry_is_404(client: APIClient):
    # when
    response = client.get(entry_url("no-such-entry"))
    # then
    body = assert_error(response, 404, "entry_not_found")
    assert body["message"] == "Entry not found: 'no-such-entry'"


def test_read_of_another_principals_entry_is_the_same_404_as_a_missing_one(
    client: APIClient, foreign_conversation: Conversation
):
    # when
    foreign = client.get(entry_url(foreign_conversation.root.pk))
    missing = client.get(entry_url("no-such-entry"))
    # then
    assert_error(foreign, 404, "entry_not_found")
    assert without_ids(foreign.json(), {foreign_conversation.root.pk: "ID"}) == without_ids(
        missing.json(), {"no-such-entry": "ID"}
    )


def test_delete_splices_the_entry_out_of_its_branch(client: APIClient, conversation: Conversation):
    # when
    response = client.delete(entry_url(conversation.reply.pk))
    # then: its child hangs from its parent now, and the answer counts what went
    assert response.status_code == 200, response.json()
    assert response.json()["report"]["entries"] == {"deleted": 1, "redacted": 0}
    assert not Entry.objects.filter(pk=conversation.reply.pk).exists()
    assert Entry.objects.get(pk=conversation.follow_up.pk).parent_id == conversation.root.pk


def test_delete_of_the_active_leaf_moves_the_leaf_to_its_parent(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.delete(entry_url(conversation.follow_up.pk))
    # then
    assert response.status_code == 200
    assert Thread.objects.get(pk=conversation.thread_id).active_leaf_id == conversation.reply.pk


def test_delete_of_a_missing_entry_is_404(client: APIClient):
    # when
    response = client.delete(entry_url("no-such-entry"))
    # then
    assert_error(response, 404, "entry_not_found")


def test_delete_of_another_principals_entry_is_404_and_deletes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.delete(entry_url(foreign_conversation.root.pk))
    # then
    assert_error(response, 404, "entry_not_found")
    assert snapshot_rows() == before


# --- redact ----------------------------------------------------------------------------


def test_redact_replaces_the_text_and_records_when_and_why(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.post(
        f"{entry_url(conversation.follow_up.pk)}redact/",
        {"reason": "personal data", "at": "2025-04-01T10:00:00Z"},
        format="json",
    )
    # then
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["content"] == REDACTED_TEXT
    assert body["redaction"] == {"at": "2025-04-01T10:00:00+00:00", "reason": "personal data"}
    entry = Entry.objects.get(pk=conversation.follow_up.pk)
    assert entry.content == REDACTED_TEXT
    assert entry.parent_id == conversation.reply.pk


def test_redact_without_a_body_uses_the_current_time(client: APIClient, conversation: Conversation):
    # when
    response = client.post(f"{entry_url(conversation.root.pk)}redact/", {}, format="json")
    # then
    assert response.status_code == 200, response.json()
    assert set(response.json()["redaction"]) == {"at"}


def test_redact_of_an_event_is_a_conflict_and_changes_nothing(
    client: APIClient, conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(f"{entry_url(conversation.label.pk)}redact/", {}, format="json")
    # then
    body = assert_error(response, 409, "redaction_refused")
    assert body["message"] == (
        f"Entry {conversation.label.pk!r} is a label event: events are deleted, not redacted."
    )
    assert snapshot_rows() == before


@pytest.mark.parametrize(
    ("payload", "fields"),
    [
        ({"at": "last tuesday"}, ["at"]),
        ({"reason": "r" * 1001}, ["reason"]),
        ({"reason": ["why"]}, ["reason"]),
    ],
)
def test_redact_refuses_bad_fields_and_changes_nothing(
    client: APIClient, conversation: Conversation, payload, fields
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(f"{entry_url(conversation.root.pk)}redact/", payload, format="json")
    # then
    assert_error(response, 400, "invalid", fields)
    assert snapshot_rows() == before


def test_redact_of_a_missing_entry_is_404(client: APIClient):
    # when
    response = client.post(f"{entry_url('no-such-entry')}redact/", {}, format="json")
    # then
    assert_error(response, 404, "entry_not_found")


def test_redact_of_another_principals_entry_is_404_and_changes_nothing(
    client: APIClient, foreign_conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when
    response = client.post(f"{entry_url(foreign_conversation.root.pk)}redact/", {}, format="json")
    # then
    assert_error(response, 404, "entry_not_found")
    assert snapshot_rows() == before
