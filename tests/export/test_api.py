"""``GET /api/memory/users/<user_id>/export/``: the export streamed as a download, for a
person holding ``export_user_memory`` within their grants; never for an API key."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Permission, User
from django.http import StreamingHttpResponse
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.api.views.export import export_file_name, in_chunks
from cogitator_memory.export.access import EXPORT_PERMISSION, may_export
from tests.api.conftest import API, api_key_client, assert_error, token_client
from tests.export.conftest import (
    AGENT,
    CANARY,
    OTHER_AGENT,
    OTHER_USER,
    USER,
    Memory,
    remember,
)

pytestmark = pytest.mark.django_db

EXPORT = f"{API}/users/{USER}/export/"


@pytest.fixture
def exporter(make_user: Callable[..., User]) -> Callable[..., APIClient]:
    """A client of a person with these grants, holding the export permission unless told
    otherwise."""

    def make(grants: Any, *, permitted: bool = True, name: str = "desk") -> APIClient:
        user = make_user(name, grants)
        if permitted:
            user.user_permissions.add(Permission.objects.get(codename="export_user_memory"))
        return token_client(user)

    return make


def streamed(response: Any) -> dict[str, Any]:
    """The body of a streamed answer, read as JSON."""
    assert isinstance(response, StreamingHttpResponse), type(response)
    loaded: dict[str, Any] = json.loads(b"".join(response.streaming_content))
    return loaded


def test_the_export_is_streamed_as_a_json_download(
    memory: Memory, others: list[Memory], exporter: Callable[..., APIClient]
):
    # given
    client = exporter({AGENT: None})
    # when
    response = client.get(EXPORT)
    # then
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="memory-export-u1.json"'
    body = b"".join(response.streaming_content)
    exported = json.loads(body)
    assert exported["user_id"] == USER and exported["agents"] == [AGENT]
    assert {t["id"] for t in exported["threads"]} == {memory.first.pk, memory.second.pk}
    assert exported["counts"]["entries"] == 8
    assert CANARY.encode() not in body


def test_the_agents_asked_for_limit_the_export(memory: Memory, exporter: Callable[..., APIClient]):
    # given
    remember(OTHER_AGENT, USER, tag=" (sales)")
    client = exporter({AGENT: [USER], OTHER_AGENT: None})
    # when
    both = streamed(client.get(EXPORT))
    one = streamed(client.get(f"{EXPORT}?agent_id={OTHER_AGENT}"))
    again = streamed(client.get(f"{EXPORT}?agent_id={OTHER_AGENT}&agent_id={AGENT}"))
    # then
    assert both["agents"] == [OTHER_AGENT, AGENT] == again["agents"]
    assert one["agents"] == [OTHER_AGENT]
    assert one["counts"]["threads"] == 2 and both["counts"]["threads"] == 4


def test_a_person_without_the_permission_is_refused(
    memory: Memory, exporter: Callable[..., APIClient]
):
    # given: grants that reach the user, no permission
    client = exporter({AGENT: None}, permitted=False)
    # when
    response = client.get(EXPORT)
    # then
    body = assert_error(response, 403, "export_not_permitted")
    assert EXPORT_PERMISSION in body["message"]


def test_an_api_key_is_refused_whatever_its_grants(
    memory: Memory, make_api_key: Callable[..., tuple[APIKey, str]]
):
    # given: a key granted every user of the agent
    _api_key, key = make_api_key("service", {AGENT: None})
    # when
    response = api_key_client(key).get(EXPORT)
    # then: exports are for people; automation runs manage.py export_user
    body = assert_error(response, 403, "export_not_permitted")
    assert body["message"] == (
        "Exports are made by people: an API key cannot export a user's memory. "
        "Trusted automation runs manage.py export_user."
    )


def test_a_superuser_may_export_anyone(memory: Memory, make_user: Callable[..., User]):
    # given
    client = token_client(make_user("root", is_superuser=True))
    # when
    exported = streamed(client.get(EXPORT))
    # then
    assert exported["counts"]["threads"] == 2


def test_an_inactive_user_holding_the_permission_may_not(make_user: Callable[..., User]):
    # given
    user = make_user("gone", {AGENT: None}, is_active=False)
    user.user_permissions.add(Permission.objects.get(codename="export_user_memory"))
    # then
    assert may_export(user) is False


def test_a_user_the_grants_do_not_reach_is_refused(
    memory: Memory, others: list[Memory], exporter: Callable[..., APIClient]
):
    # given: the permission, and a grant of the other user only
    client = exporter({AGENT: [OTHER_USER]})
    # when
    response = client.get(EXPORT)
    # then
    body = assert_error(response, 403, "permission_denied")
    assert body["message"] == "None of your grants reaches the memory of user 'u1'."
    assert CANARY not in response.content.decode()


def test_an_agent_the_grants_do_not_reach_is_refused(
    memory: Memory, exporter: Callable[..., APIClient]
):
    # given
    client = exporter({AGENT: None})
    # when
    response = client.get(f"{EXPORT}?agent_id={OTHER_AGENT}")
    # then
    body = assert_error(response, 403, "permission_denied")
    assert body["message"] == "You have no grant for agent 'sales'."


def test_a_grant_of_the_agent_exports_only_what_it_reaches(
    memory: Memory, exporter: Callable[..., APIClient]
):
    # given: the user in two agents; the person is granted one
    remember(OTHER_AGENT, USER, tag=CANARY)
    client = exporter({AGENT: None})
    # when
    response = client.get(EXPORT)
    # then
    body = b"".join(response.streaming_content)
    assert json.loads(body)["agents"] == [AGENT]
    assert CANARY.encode() not in body


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?agent_id=", "agent_id.0"),
        (f"?agent_id={AGENT}&agent_id=%20", "agent_id.1"),
        ("?agent_id=a%00", "agent_id.0"),
    ],
)
def test_a_bad_agent_id_is_refused_with_its_field(
    memory: Memory, exporter: Callable[..., APIClient], query: str, field: str
):
    # when
    response = exporter({AGENT: None}).get(EXPORT + query)
    # then
    assert_error(response, 400, "invalid", [field])


def test_a_user_id_with_nul_is_refused_with_its_field(exporter: Callable[..., APIClient]):
    # when
    user_id = quote("a\x00b")
    response = exporter({AGENT: None}).get(f"{API}/users/{user_id}/export/")
    # then
    assert_error(response, 400, "invalid", ["user_id"])


def test_a_user_id_with_a_slash_is_exported(exporter: Callable[..., APIClient]):
    # given
    remember(AGENT, "org/ana")
    # when
    response = exporter({AGENT: None}).get(f"{API}/users/{quote('org/ana', safe='')}/export/")
    # then
    exported = streamed(response)
    assert exported["user_id"] == "org/ana" and exported["counts"]["threads"] == 2
    assert response["Content-Disposition"] == ('attachment; filename="memory-export-org_ana.json"')


def test_head_answers_the_headers_without_the_document(
    memory: Memory, exporter: Callable[..., APIClient]
):
    # when
    response = exporter({AGENT: None}).head(EXPORT)
    # then
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    assert b"".join(response.streaming_content) == b""


def test_an_anonymous_request_is_not_authenticated(memory: Memory):
    # when
    response = APIClient().get(EXPORT)
    # then
    assert_error(response, 401, "not_authenticated")


def test_the_file_name_keeps_only_safe_characters_of_the_user_id():
    # then
    assert export_file_name('a"b\r\nc é/ü') == "memory-export-a_b__c____.json"
    assert len(export_file_name("x" * 255)) == len("memory-export-.json") + 100


def test_pieces_are_sent_in_chunks_of_about_the_size_asked():
    # when
    chunks = list(in_chunks((f"{n:04d}" for n in range(100)), size=10))
    # then
    assert b"".join(chunks) == "".join(f"{n:04d}" for n in range(100)).encode()
    assert {len(chunk) for chunk in chunks} == {12, 4}
