"""Input is read as the schema describes it: no number taken for a text, no 0 for a boolean,
no empty query value for an absent one; and what the schema allows is accepted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest
from rest_framework.test import APIClient

from cogitator_memory.api.serializers.fields import parse_moment
from tests.api.conftest import API, Conversation, assert_error, row_counts

pytestmark = pytest.mark.django_db

FIRST = datetime.min.replace(tzinfo=UTC)
LAST = datetime.max.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("post", "threads/", {"agent_id": 0}, "agent_id"),
        ("post", "threads/", {"agent_id": "agent-a", "id": 7}, "id"),
        ("post", "threads/", {"agent_id": "  "}, "agent_id"),
        ("patch", "threads/{thread}/", {"metadata": {}, "replace": 0}, "replace"),
        ("patch", "threads/{thread}/", {"metadata": {}, "replace": "true"}, "replace"),
        ("post", "threads/{thread}/entries/", {"role": "user", "content": 5}, "content"),
        ("post", "threads/{thread}/entries/", {"role": 1, "content": "x"}, "role"),
        (
            "post",
            "threads/{thread}/entries/",
            {"role": "user", "content": "x", "token_count": "3"},
            "token_count",
        ),
        (
            "post",
            "threads/{thread}/entries/",
            {"role": "user", "content": "x", "activate": 1},
            "activate",
        ),
        (
            "post",
            "threads/{thread}/entries/",
            {"role": "user", "content": "x", "created_at": "2025-01-01T00:00:00"},
            "created_at",
        ),
        ("post", "threads/{thread}/rewind/", {"to_entry_id": 1}, "to_entry_id"),
        ("post", "entries/{entry}/redact/", {"reason": 1}, "reason"),
    ],
)
def test_a_body_value_of_another_json_type_is_refused_not_converted(
    client: APIClient, conversation: Conversation, method: str, path: str, body: Any, field: str
):
    # given
    url = f"{API}/" + path.format(thread=conversation.thread_id, entry=conversation.root.pk)
    before = row_counts()
    # when
    response = getattr(client, method)(url, body, format="json")
    # then
    assert_error(response, 400, "invalid", [field])
    assert row_counts() == before


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("threads/?updated_before=", "updated_before"),
        ("threads/?agent_id=", "agent_id"),
        ("threads/?metadata=", "metadata"),
        ("threads/?cursor=", "cursor"),
        ("threads/?limit=", "limit"),
        ("threads/?limit=+5", "limit"),
        ("threads/?metadata=" + quote('{"a\\n": 1}'), "metadata"),
        ("threads/{thread}/entries/?include_tool_calls=1", "include_tool_calls"),
        ("threads/{thread}/entries/?include_tool_calls=", "include_tool_calls"),
        ("threads/{thread}/entries/?limit=5.0", "limit"),
        ("threads/{thread}/entries/?types=", "types"),
        ("threads/{thread}/entries/?types=message,%20label", "types"),
        ("threads/{thread}/entries/?before=2025-01-01%2000:00:00", "before"),
        ("threads/{thread}/path/?leaf_id=", "leaf_id"),
        ("search/?q=parcel&index=", "index"),
    ],
)
def test_a_query_value_outside_its_schema_is_refused(
    client: APIClient, conversation: Conversation, path: str, field: str
):
    # when
    response = client.get(f"{API}/" + path.format(thread=conversation.thread_id))
    # then
    assert_error(response, 400, "invalid", [field])


@pytest.mark.parametrize(
    "path",
    [
        "threads/?cursor=0~0",
        "threads/?cursor=-999999999999999999~a",
        "threads/?updated_after=0001-01-01T00:00:00%2B23:59",
        "threads/?metadata=" + quote('{"userId": "u1", "n": 1.5, "b": true, "x": null}'),
        "threads/{thread}/entries/?cursor=0.0",
        "threads/{thread}/entries/?include_tool_calls=true&types=all",
        "threads/{thread}/entries/?after=9999-12-31T23:59:59-23:59",
        "threads/{thread}/path/?include_tool_calls=false&types=message,label",
        "search/?q=%20parcel%20",
    ],
)
def test_a_query_value_its_schema_allows_is_accepted(
    client: APIClient, conversation: Conversation, path: str
):
    # when
    response = client.get(f"{API}/" + path.format(thread=conversation.thread_id))
    # then
    assert response.status_code == 200, response.content[:300]


def test_an_entry_of_another_thread_is_a_404_naming_the_field(
    client: APIClient, conversation: Conversation
):
    # given
    other = client.post(f"{API}/threads/", {"agent_id": "agent-a"}, format="json").json()
    # when
    response = client.post(
        f"{API}/threads/{other['id']}/checkout/", {"entry_id": conversation.root.pk}, format="json"
    )
    # then
    assert_error(response, 404, "entry_not_in_thread", ["entry_id"])


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2025-01-31T12:00:00Z", datetime(2025, 1, 31, 12, tzinfo=UTC)),
        ("2025-01-31t12:00:00.5+01:00", datetime(2025, 1, 31, 11, 0, 0, 500000, tzinfo=UTC)),
        ("2025-01-31T12:00:00.1234567-00:30", datetime(2025, 1, 31, 12, 30, 0, 123456, tzinfo=UTC)),
        ("2016-12-31T23:59:60Z", datetime(2016, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("0001-01-01T00:00:00+00:01", FIRST),
        ("0000-12-31T23:59:59Z", FIRST),
        ("0000-12-31T23:00:00-23:00", datetime(1, 1, 1, 22, tzinfo=UTC)),
        ("9999-12-31T23:59:59-00:01", LAST),
    ],
)
def test_an_rfc_3339_moment_is_read_in_utc_and_clamped_to_the_storable_range(
    text: str, moment: datetime
):
    # when / then
    assert parse_moment(text) == moment


@pytest.mark.parametrize(
    "text",
    [
        "2025-01-31 12:00:00Z",
        "2025-01-31T12:00:00",
        "2025-01-31T12:00Z",
        "2025-02-30T12:00:00Z",
        "2025-01-31T24:00:00Z",
        "2025-01-31T12:00:60Z",
        "2025-01-31T12:00:00+24:00",
        "2025-01-31T12:00:00Z\n",
        "\uff12025-01-31T12:00:00Z",  # a full-width digit
    ],
)
def test_anything_else_is_not_a_moment(text: str):
    # when / then
    assert parse_moment(text) is None
