"""One error shape for every failed request, the typed errors mapped in one place, and no
server error on any input."""

from __future__ import annotations

import base64
import json
import sqlite3
from typing import Any
from urllib.parse import quote

import pytest
from django.db import IntegrityError, OperationalError
from rest_framework import exceptions
from rest_framework.test import APIClient

from cogitator_memory.api.exceptions import (
    database_busy_error,
    flatten_errors,
    memory_exception_handler,
)
from cogitator_memory.exceptions import (
    CogitatorMemoryError,
    DatabaseBusy,
    EntryNotInThread,
    NotOnActiveBranch,
    PartialEntryNotSaveable,
    ThreadNotFound,
)
from cogitator_memory.threads.models import Thread
from tests.api.conftest import API, Conversation, assert_error, row_counts, snapshot_rows

pytestmark = pytest.mark.django_db

DEEP = 5000  # nesting far beyond Python's recursion limit


def encoded_cursor(*fields: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(fields)).encode()).decode().rstrip("=")


# --- the shape of framework errors ------------------------------------------------------


def test_a_method_the_endpoint_lacks_is_405_in_the_error_shape(
    client: APIClient, conversation: Conversation
):
    # when
    response = client.put(f"{API}/threads/{conversation.thread_id}/", {}, format="json")
    # then
    body = assert_error(response, 405, "method_not_allowed")
    assert body["message"] == 'Method "PUT" not allowed.'


def test_a_body_that_is_not_json_is_415_in_the_error_shape(client: APIClient):
    # when
    response = client.post(f"{API}/threads/", "agent-a", content_type="text/plain")
    # then
    body = assert_error(response, 415, "unsupported_media_type")
    assert body["message"] == 'Unsupported media type "text/plain" in request.'


def test_malformed_json_is_a_400_parse_error(client: APIClient):
    # when
    response = client.post(f"{API}/threads/", '{"agent_id": ', content_type="application/json")
    # then
    body = assert_error(response, 400, "parse_error")
    assert body["message"].startswith("JSON parse error")
    assert row_counts() == (0, 0)


def test_nan_in_a_json_body_is_a_400_parse_error(client: APIClient):
    # when
    response = client.post(
        f"{API}/threads/",
        '{"agent_id": "agent-a", "metadata": {"score": NaN}}',
        content_type="application/json",
    )
    # then
    assert_error(response, 400, "parse_error")
    assert row_counts() == (0, 0)


def test_nested_field_errors_have_dotted_names(client: APIClient, conversation: Conversation):
    # when
    response = client.post(
        f"{API}/threads/{conversation.thread_id}/entries/",
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "x"}, "not an object"]},
        format="json",
    )
    # then
    assert_error(response, 400, "invalid", ["tool_calls.1"])


def test_a_form_encoded_body_is_refused_as_415_and_nothing_is_written(client: APIClient):
    # given
    before = Thread.objects.count()
    # when
    response = client.post(f"{API}/threads/", {"agent_id": "agent-a"})
    # then
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"
    assert Thread.objects.count() == before


# --- the one map of typed errors -------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "status", "code", "errors"),
    [
        (ThreadNotFound("t-1"), 404, "thread_not_found", {}),
        (
            EntryNotInThread("e-1", "t-1", field="parent_id"),
            404,
            "entry_not_in_thread",
            {"parent_id": ["Entry 'e-1' is not an entry of thread 't-1'."]},
        ),
        (NotOnActiveBranch("e-1", "t-1"), 409, "not_on_active_branch", {}),
        (PartialEntryNotSaveable("read without tool calls"), 400, "partial_entry", {}),
        (CogitatorMemoryError("something"), 400, "memory_error", {}),
    ],
)
def test_typed_errors_map_to_a_status_and_their_code(error, status, code, errors):
    # when
    response = memory_exception_handler(error, {})
    # then
    assert response is not None
    assert response.status_code == status
    assert response.data == {"code": code, "message": error.message, "errors": errors}


def test_errors_the_handler_does_not_know_are_left_to_django():
    # when
    response = memory_exception_handler(ValueError("boom"), {})
    # then
    assert response is None


def test_a_drf_error_keeps_its_status_and_code():
    # when
    response = memory_exception_handler(exceptions.Throttled(wait=12), {})
    # then
    assert response is not None
    assert response.status_code == 429
    assert response.data["code"] == "throttled"
    assert response["Retry-After"] == "12"


def test_flatten_errors_names_nested_fields_with_dots():
    # when
    flat = flatten_errors({"metadata": {"userId": ["Bad."]}, "tool_calls": [{}, {"id": ["No."]}]})
    # then
    assert flat == {"metadata.userId": ["Bad."], "tool_calls.1.id": ["No."]}


# --- no server error on any input ------------------------------------------------------

# (label, method, path, body): {thread} and {entry} are filled in with a thread and an
# entry of the caller; a body that is a str is sent as raw JSON text.
ODD_INPUTS: list[tuple[str, str, str, Any]] = [
    ("huge thread list limit", "get", "threads/?limit=" + "9" * 40, None),
    ("negative thread list limit", "get", "threads/?limit=-1", None),
    ("cursor of the wrong shape", "get", "threads/?cursor=" + encoded_cursor(1, 2, 3), None),
    (
        "cursor with a naive time",
        "get",
        "threads/?cursor=" + encoded_cursor("2025-01-01", "t"),
        None,
    ),
    ("cursor with a number id", "get", "threads/?cursor=" + encoded_cursor("2025-01-01Z", 5), None),
    (
        "cursor with a nul id",
        "get",
        "threads/?cursor=" + encoded_cursor("2025-01-01T00:00:00+00:00", "t\x00"),
        None,
    ),
    ("metadata filter with an empty key", "get", "threads/?metadata=" + quote('{"": 1}'), None),
    (
        "metadata filter with a nul value",
        "get",
        "threads/?metadata=" + quote('{"k": "\\u0000"}'),
        None,
    ),
    (
        "metadata filter with a huge integer",
        "get",
        "threads/?metadata=" + quote('{"k": 123456789012345678901234567890}'),
        None,
    ),
    ("metadata filter with NaN", "get", "threads/?metadata=" + quote('{"k": NaN}'), None),
    ("metadata filter with Infinity", "get", "threads/?metadata=" + quote('{"k": Infinity}'), None),
    ("metadata filter with 1e400", "get", "threads/?metadata=" + quote('{"k": 1e400}'), None),
    ("metadata filter nested deeply", "get", "threads/?metadata=" + "[" * DEEP, None),
    ("agent filter with a nul", "get", "threads/?agent_id=a%00", None),
    (
        "updated_after past year 9999 in UTC",
        "get",
        "threads/?updated_after=" + quote("9999-12-31T23:59:59-10:00"),
        None,
    ),
    (
        "updated_before before year 1 in UTC",
        "get",
        "threads/?updated_before=" + quote("0001-01-01T00:00:00+10:00"),
        None,
    ),
    ("thread id of 10,000 characters", "get", "threads/" + "t" * 10_000 + "/", None),
    ("thread id with a nul", "get", "threads/t%00/", None),
    ("thread id with quotes", "get", "threads/%27%20OR%201%3D1%20--/", None),
    ("entry id with a nul", "get", "entries/e%00/", None),
    ("entry id with a nul to delete", "delete", "entries/e%00/", None),
    ("thread id with a nul to patch", "patch", "threads/t%00/", {"metadata": {}}),
    (
        "create with a nul in metadata",
        "post",
        "threads/",
        {"agent_id": "agent-a", "metadata": {"k": "a\x00b"}},
    ),
    (
        "create with a nul in a metadata key",
        "post",
        "threads/",
        {"agent_id": "agent-a", "metadata": {"k\x00": 1}},
    ),
    (
        "create with a lone surrogate in metadata",
        "post",
        "threads/",
        '{"agent_id": "agent-a", "metadata": {"k": "\\ud800"}}',
    ),
    ("create with a nul in the agent", "post", "threads/", {"agent_id": "agent\x00"}),
    ("create with a nul in the id", "post", "threads/", {"agent_id": "agent-a", "id": "t\x00"}),
    (
        "create with metadata nested deeply",
        "post",
        "threads/",
        '{"agent_id": "agent-a", "metadata": {"k": ' + "[" * DEEP + "]" * DEEP + "}}",
    ),
    ("patch with a nul in metadata", "patch", "threads/{thread}/", {"metadata": {"k": "\x00"}}),
    (
        "entry with a nul in content",
        "post",
        "threads/{thread}/entries/",
        {"role": "user", "content": "a\x00b"},
    ),
    (
        "entry with a nul in a content part",
        "post",
        "threads/{thread}/entries/",
        {"role": "user", "content": [{"type": "text", "text": "\x00"}]},
    ),
    (
        "entry with a lone surrogate in content",
        "post",
        "threads/{thread}/entries/",
        '{"role": "user", "content": "\\ud800"}',
    ),
    (
        "entry with a nul in metadata",
        "post",
        "threads/{thread}/entries/",
        {"role": "user", "content": "x", "metadata": {"k": "\x00"}},
    ),
    (
        "entry with a nul in an event",
        "post",
        "threads/{thread}/entries/",
        {"type": "label", "event": {"label": "\x00"}},
    ),
    (
        "entry with a nul in tool call arguments",
        "post",
        "threads/{thread}/entries/",
        {"role": "assistant", "tool_calls": [{"id": "c", "name": "n", "arguments": "\x00"}]},
    ),
    (
        "entry with a nul in its name",
        "post",
        "threads/{thread}/entries/",
        {"role": "user", "content": "x", "name": "\x00"},
    ),
    (
        "entry with a nul in its parent",
        "post",
        "threads/{thread}/entries/",
        {"role": "user", "content": "x", "parent_id": "\x00"},
    ),
    (
        "entry with a huge token count",
        "post",
        "threads/{thread}/entries/",
        {"role": "user", "content": "x", "token_count": 10**30},
    ),
    (
        "entry with created_at past year 9999",
        "post",
        "threads/{thread}/entries/",
        {"role": "user", "content": "x", "created_at": "9999-12-31T23:59:59-10:00"},
    ),
    (
        "entry with a nested body",
        "post",
        "threads/{thread}/entries/",
        '{"role": "user", "content": ' + "[" * DEEP + "]" * DEEP + "}",
    ),
    (
        "entry list before past year 9999",
        "get",
        "threads/{thread}/entries/?before=" + quote("9999-12-31T23:59:59-10:00"),
        None,
    ),
    (
        "entry cursor past year 9999",
        "get",
        "threads/{thread}/entries/?cursor=" + "9" * 18 + ".1",
        None,
    ),
    (
        "entry cursor with a huge seq",
        "get",
        "threads/{thread}/entries/?cursor=0." + "9" * 19,
        None,
    ),
    ("entry list with empty types", "get", "threads/{thread}/entries/?types=,", None),
    ("path leaf with a nul", "get", "threads/{thread}/path/?leaf_id=%00", None),
    ("path before with a nul", "get", "threads/{thread}/path/?before=%00", None),
    ("rewind to a nul", "post", "threads/{thread}/rewind/", {"to_entry_id": "\x00"}),
    ("rewind to a list", "post", "threads/{thread}/rewind/", {"to_entry_id": ["{entry}"]}),
    ("checkout a nul", "post", "threads/{thread}/checkout/", {"entry_id": "e\x00"}),
    ("fork at a nul", "post", "threads/{thread}/fork/", {"at_entry_id": "\x00"}),
    (
        "fork into a nul id",
        "post",
        "threads/{thread}/fork/",
        {"at_entry_id": "{entry}", "new_thread_id": "t\x00"},
    ),
    ("redact with a nul reason", "post", "entries/{entry}/redact/", {"reason": "\x00"}),
    ("redact at year 9999", "post", "entries/{entry}/redact/", {"at": "9999-12-31T23:59:59-10:00"}),
    ("redact with a body that is a list", "post", "entries/{entry}/redact/", '["x"]'),
]


def send(client: APIClient, method: str, path: str, body: Any, conversation: Conversation) -> Any:
    fill = {"{thread}": conversation.thread_id, "{entry}": conversation.reply.pk}
    for placeholder, value in fill.items():
        path = path.replace(placeholder, value)
    if isinstance(body, dict):
        body = json.loads(json.dumps(body).replace('"{entry}"', json.dumps(fill["{entry}"])))
    url = f"{API}/{path}"
    if body is None:
        return getattr(client, method)(url)
    if isinstance(body, str):
        return getattr(client, method)(url, body, content_type="application/json")
    return getattr(client, method)(url, body, format="json")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [case[1:] for case in ODD_INPUTS],
    ids=[case[0] for case in ODD_INPUTS],
)
def test_odd_input_gets_an_answer_in_the_documented_shape_never_a_server_error(
    client: APIClient, conversation: Conversation, method: str, path: str, body: Any
):
    # when
    response = send(client, method, path, body, conversation)
    # then
    assert response.status_code < 500, response.content[:500]
    if response.status_code >= 400:
        assert set(response.json()) == {"code", "message", "errors"}


# What a fix of each server error above should answer: the same on both databases.


def test_a_json_body_nested_too_deeply_is_a_400_parse_error(
    client: APIClient, conversation: Conversation
):
    # given
    before = snapshot_rows()
    nested = "[" * DEEP + "]" * DEEP
    # when
    response = client.post(
        f"{API}/threads/{conversation.thread_id}/entries/",
        '{"role": "user", "content": ' + nested + "}",
        content_type="application/json",
    )
    # then
    assert_error(response, 400, "parse_error")
    assert snapshot_rows() == before


def test_a_metadata_filter_nested_too_deeply_is_refused(client: APIClient):
    # when
    response = client.get(f"{API}/threads/?metadata=" + "[" * DEEP + "]" * DEEP)
    # then
    assert_error(response, 400, "invalid", ["metadata"])


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_metadata_filter_with_a_number_json_cannot_hold_is_refused(client: APIClient, value):
    # when
    response = client.get(f"{API}/threads/?metadata=" + quote('{"score": ' + value + "}"))
    # then
    assert_error(response, 400, "invalid", ["metadata"])


def test_a_nul_character_in_thread_metadata_is_refused(client: APIClient):
    # when: PostgreSQL's jsonb cannot hold U+0000, so no database may be given it
    response = client.post(
        f"{API}/threads/", {"agent_id": "agent-a", "metadata": {"k": "a\x00b"}}, format="json"
    )
    # then
    assert_error(response, 400, "invalid", ["metadata"])
    assert row_counts() == (0, 0)


def test_a_nul_character_in_entry_content_is_refused(client: APIClient, conversation: Conversation):
    # given
    before = snapshot_rows()
    # when
    response = client.post(
        f"{API}/threads/{conversation.thread_id}/entries/",
        {"role": "user", "content": "a\x00b"},
        format="json",
    )
    # then
    assert_error(response, 400, "invalid_entry", ["content"])
    assert snapshot_rows() == before


def test_a_lone_surrogate_in_entry_content_is_refused(
    client: APIClient, conversation: Conversation
):
    # given
    before = snapshot_rows()
    # when: valid JSON text, but not text UTF-8 can encode
    response = client.post(
        f"{API}/threads/{conversation.thread_id}/entries/",
        '{"role": "user", "content": "\\ud800"}',
        content_type="application/json",
    )
    # then
    assert_error(response, 400, "invalid_entry", ["content"])
    assert snapshot_rows() == before


@pytest.mark.parametrize("path", ["threads/t%00/", "threads/t%00/entries/", "entries/e%00/"])
def test_an_id_with_a_nul_character_in_the_url_is_404(client: APIClient, path: str):
    # when: no thread or entry can have such an id
    response = client.get(f"{API}/{path}")
    # then
    assert response.status_code == 404, response.content[:300]
    assert response.json()["code"] in ("thread_not_found", "entry_not_found")


@pytest.mark.parametrize(
    "query",
    [
        "updated_after=" + quote("9999-12-31T23:59:59-10:00"),
        "updated_before=" + quote("0001-01-01T00:00:00+10:00"),
    ],
)
def test_a_time_filter_outside_the_datetime_range_is_clamped(client: APIClient, query: str):
    # when: the moment is a valid date-time in its own offset but outside the years 1 to
    # 9999 in UTC; it is read as the nearest moment that can be stored
    response = client.get(f"{API}/threads/?{query}")
    # then: no thread was updated after the last moment or before the first
    assert response.status_code == 200, response.content[:300]
    assert response.json()["results"] == []


@pytest.mark.parametrize(("moment", "found"), [("9" * 18, True), ("-" + "9" * 18, False)])
def test_a_thread_cursor_outside_the_datetime_range_is_clamped(
    client: APIClient, conversation: Conversation, moment: str, found: bool
):
    # when: a cursor of the documented shape, far past the last moment (or before the
    # first) a datetime holds
    response = client.get(f"{API}/threads/?cursor={moment}~t")
    # then: it is read as that last (or first) moment
    assert response.status_code == 200, response.content[:300]
    ids = [thread["id"] for thread in response.json()["results"]]
    assert ids == ([conversation.thread_id] if found else [])


@pytest.mark.parametrize(
    ("cursor", "found"),
    [("9" * 18 + ".1", True), ("-" + "9" * 18 + ".1", False), ("9" * 18 + "." + "9" * 19, True)],
)
def test_an_entry_cursor_outside_the_datetime_range_is_clamped(
    client: APIClient, conversation: Conversation, cursor: str, found: bool
):
    # when: a cursor of the documented shape, its moment (or seq) beyond what is stored
    response = client.get(f"{API}/threads/{conversation.thread_id}/entries/?cursor={cursor}")
    # then: it is read as the last (or first) position
    assert response.status_code == 200, response.content[:300]
    assert len(response.json()["results"]) == (4 if found else 0)


# --- a busy database ---------------------------------------------------------------------


class PostgresError(Exception):
    """A driver error as psycopg raises it, with its SQLSTATE."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def wrapped(cause: Exception, wrapper: type[Exception] = OperationalError) -> Exception:
    """``cause`` as Django raises it: its own error class, the driver's as the cause."""
    error = wrapper(str(cause))
    error.__cause__ = cause
    return error


def sqlite_busy() -> Exception:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = 5  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    "error",
    [
        wrapped(sqlite_busy()),
        wrapped(sqlite3.OperationalError("database table is locked")),
        wrapped(PostgresError("canceling statement due to lock timeout", "55P03")),
        wrapped(PostgresError("could not serialize access", "40001")),
        wrapped(PostgresError("deadlock detected", "40P01")),
        wrapped(PostgresError("canceling statement due to statement timeout", "57014")),
    ],
    ids=[
        "sqlite-busy",
        "sqlite-locked",
        "lock-timeout",
        "serialization",
        "deadlock",
        "statement-timeout",
    ],
)
def test_a_lock_wait_that_ran_out_is_a_busy_database(error: Exception) -> None:
    # when
    busy = database_busy_error(error)
    # then
    assert isinstance(busy, DatabaseBusy)
    assert busy.retry_after == 1
    assert busy.code == "database_busy"
    assert str(error.__cause__) in busy.message


@pytest.mark.parametrize(
    "error",
    [
        wrapped(sqlite3.OperationalError("no such table: cogitator_memory_thread")),
        wrapped(PostgresError("column does not exist", "42703")),
        wrapped(PostgresError("duplicate key value", "23505"), IntegrityError),
        sqlite_busy(),  # not wrapped by Django: not an error of a connection of Django's
        RuntimeError("database is locked"),
    ],
    ids=["no-table", "no-column", "integrity", "unwrapped", "not-a-database-error"],
)
def test_other_errors_are_not_a_busy_database(error: Exception) -> None:
    assert database_busy_error(error) is None
