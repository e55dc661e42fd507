"""GET /api/memory/search/: the answer, the modes, the caller's grants, the errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.threads import services
from tests.api.conftest import API, Principal, api_key_client, assert_error, token_client
from tests.search.support import (
    CONCEPT_PROVIDER,
    FAILING_PROVIDER,
    embeddings_settings,
    write_text,
)

if TYPE_CHECKING:
    from pytest_django.fixtures import Settings as SettingsWrapper

pytestmark = pytest.mark.django_db

SEARCH = f"{API}/search/"
MODES = ["keyword", "vector", "hybrid"]
TEXT = "the puppy chewed the parcel"


@pytest.fixture(autouse=True)
def no_service(settings: SettingsWrapper) -> None:
    settings.COGITATOR_MEMORY = embeddings_settings(None)


@pytest.fixture
def with_concepts(settings: SettingsWrapper) -> None:
    settings.COGITATOR_MEMORY = embeddings_settings(CONCEPT_PROVIDER)


@pytest.fixture
def rows(db: None) -> dict[str, str]:
    """The same text in rows of every kind of owner; source id -> embedding id. A row
    naming a thread is searchable only while that thread exists and is open to the
    caller, so thread ta exists (agent-a, no user)."""
    services.create_thread("agent-a", thread_id="ta")
    written = [
        write_text("a", TEXT, agent="agent-a", thread="ta"),
        write_text("a-u1", TEXT, agent="agent-a", user="u1"),
        write_text("a-u2", TEXT, agent="agent-a", user="u2"),
        write_text("b", TEXT, agent="agent-b"),
        write_text("shared", TEXT),
        write_text("shared-t", TEXT, thread="tb"),
    ]
    return {embedding.source_id: embedding.id for embedding in written}


def found(client: APIClient, query: str = "puppy parcel", **params: Any) -> list[str]:
    response = client.get(SEARCH, {"q": query, "limit": 100, **params})
    assert response.status_code == 200, response.json()
    return sorted(hit["source_id"] for hit in response.json()["results"])


# --- answers ---------------------------------------------------------------------------


def test_a_keyword_search_answers_hits_with_their_embedding_and_score(
    client: APIClient, rows: dict[str, str]
):
    # when
    response = client.get(SEARCH, {"q": "parcel", "mode": "keyword", "thread_id": "ta"})
    # then
    body = response.json()
    assert response.status_code == 200
    assert body["mode"] == "keyword"
    assert body["channels"] == ["keyword"]
    first = body["results"][0]
    assert set(first) == {"id", "source_type", "source_id", "content", "metadata", "score"}
    assert first["content"] == TEXT
    assert first["source_type"] == "document"
    assert isinstance(first["score"], float) and first["score"] > 0
    assert {(hit["id"], hit["source_id"]) for hit in body["results"]} == {
        (rows[s], s) for s in ("a", "a-u1", "a-u2")
    }


def test_hybrid_is_the_default_and_is_keyword_search_without_a_service(
    client: APIClient, rows: dict[str, str]
):
    # when
    body = client.get(SEARCH, {"q": "parcel"}).json()
    # then
    assert (body["mode"], body["channels"]) == ("hybrid", ["keyword"])
    assert len(body["results"]) == 3


def test_with_a_service_hybrid_runs_both_channels(
    client: APIClient, rows: dict[str, str], with_concepts: None
):
    # when
    body = client.get(SEARCH, {"q": "dog"}).json()
    # then: "dog" is in no text; its vector finds the puppy
    assert body["channels"] == ["keyword", "vector"]
    assert sorted(hit["source_id"] for hit in body["results"]) == ["a", "a-u1", "a-u2"]


def test_a_vector_search_scores_by_cosine(
    client: APIClient, rows: dict[str, str], with_concepts: None
):
    # when
    body = client.get(SEARCH, {"q": TEXT, "mode": "vector", "limit": 1}).json()
    # then
    assert body["channels"] == ["vector"]
    assert body["results"][0]["score"] == pytest.approx(1.0, abs=1e-6)


def test_the_limit_caps_the_hits(client: APIClient, rows: dict[str, str]):
    # when
    body = client.get(SEARCH, {"q": "parcel", "limit": 2}).json()
    # then
    assert len(body["results"]) == 2


def test_a_query_without_words_finds_nothing(client: APIClient, rows: dict[str, str]):
    # when
    response = client.get(SEARCH, {"q": "?!", "mode": "keyword"})
    # then
    assert response.status_code == 200
    assert response.json()["results"] == []


# --- the caller's grants, in every mode ------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_user_sees_the_rows_of_the_agents_granted(
    client: APIClient, rows: dict[str, str], with_concepts: None, mode: str
):
    # when / then: not agent-b's, not shared rows
    assert found(client, mode=mode) == ["a", "a-u1", "a-u2"]


@pytest.mark.parametrize("mode", MODES)
def test_an_api_key_sees_the_rows_of_its_agents(
    service_b: Principal, rows: dict[str, str], with_concepts: None, mode: str
):
    # when / then
    assert found(service_b.client, mode=mode) == ["b"]


@pytest.mark.parametrize("mode", MODES)
def test_a_grant_naming_users_sees_only_their_rows(
    make_api_key: Callable[..., tuple[APIKey, str]],
    rows: dict[str, str],
    with_concepts: None,
    mode: str,
):
    # given
    _api_key, key = make_api_key("desk-u1", {"agent-a": ["u1"]})
    # when / then: not the agent's rows of no user
    assert found(api_key_client(key), mode=mode) == ["a-u1"]


@pytest.mark.parametrize("mode", MODES)
def test_shared_rows_show_only_where_the_setting_allows(
    client: APIClient, rows: dict[str, str], settings: SettingsWrapper, mode: str
):
    # given
    settings.COGITATOR_MEMORY = embeddings_settings(CONCEPT_PROVIDER, API_SEARCH_SHARED=True)
    # when / then: a row of no agent that names a thread is not shared
    assert found(client, mode=mode) == ["a", "a-u1", "a-u2", "shared"]


@pytest.mark.parametrize("mode", MODES)
def test_filters_of_another_agent_find_nothing(
    client: APIClient, rows: dict[str, str], with_concepts: None, mode: str
):
    # when / then
    assert found(client, mode=mode, agent_id="agent-b") == []


@pytest.mark.parametrize("mode", MODES)
def test_a_thread_filter_keeps_that_threads_rows_and_those_of_no_thread(
    client: APIClient, rows: dict[str, str], with_concepts: None, mode: str
):
    # when / then
    assert found(client, mode=mode, thread_id="tb") == ["a-u1", "a-u2"]


@pytest.mark.parametrize("mode", MODES)
def test_a_superuser_sees_every_row(
    make_user: Callable[..., User], rows: dict[str, str], with_concepts: None, mode: str
):
    # given
    root = make_user("root", is_superuser=True)
    # when / then
    assert found(token_client(root), mode=mode) == sorted(rows)


@pytest.mark.parametrize("mode", MODES)
def test_a_principal_without_grants_sees_nothing(
    make_user: Callable[..., User], rows: dict[str, str], with_concepts: None, mode: str
):
    # given
    nobody = make_user("nobody")
    # when / then
    assert found(token_client(nobody), mode=mode) == []


# --- what cannot be searched -----------------------------------------------------------


def test_a_vector_search_without_a_service_is_a_conflict(client: APIClient, rows: dict[str, str]):
    # when
    response = client.get(SEARCH, {"q": "parcel", "mode": "vector"})
    # then
    body = assert_error(response, 409, "embedding_service_unavailable")
    assert body["message"].startswith("No embedding service is configured")


def test_a_failing_service_is_unavailable_for_vector_search(
    client: APIClient, rows: dict[str, str], settings: SettingsWrapper
):
    # given
    settings.COGITATOR_MEMORY = embeddings_settings(FAILING_PROVIDER)
    # when
    response = client.get(SEARCH, {"q": "parcel", "mode": "vector"})
    # then: the provider's own message stays in the log
    body = assert_error(response, 503, "embedding_service_failed")
    assert body["message"] == (
        "The embedding service failed; try again later, or search by keyword."
    )


def test_a_failing_service_leaves_hybrid_search_to_keywords(
    client: APIClient, rows: dict[str, str], settings: SettingsWrapper
):
    # given
    settings.COGITATOR_MEMORY = embeddings_settings(FAILING_PROVIDER)
    # when
    response = client.get(SEARCH, {"q": "parcel"})
    # then
    assert response.status_code == 200
    assert response.json()["channels"] == ["keyword"]
    assert len(response.json()["results"]) == 3


def test_vectors_of_another_size_than_the_stores_are_a_conflict(
    client: APIClient, rows: dict[str, str], settings: SettingsWrapper
):
    # given a store and a service configured for 32 dimensions over vectors of 64
    settings.COGITATOR_MEMORY = embeddings_settings(CONCEPT_PROVIDER, DIMENSIONS=32)
    # when
    response = client.get(SEARCH, {"q": "parcel", "mode": "vector"})
    # then
    body = assert_error(response, 409, "vector_search_unavailable")
    assert body["message"] == (
        "Vector search is unavailable: stored embeddings have 64 dimensions; the store is "
        "configured for 32."
    )


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({}, "q", "This field is required."),
        ({"q": ""}, "q", "This field may not be blank."),
        ({"q": "  \t"}, "q", "This field may not be blank."),
        ({"q": "a\x00b"}, "q", "Null characters are not allowed."),
        ({"q": "x" * 2001}, "q", "Ensure this field has no more than 2000 characters."),
        (
            {"q": "parcel", "limit": "0"},
            "limit",
            "Ensure this value is greater than or equal to 1.",
        ),
        (
            {"q": "parcel", "limit": "101"},
            "limit",
            "Ensure this value is less than or equal to 100.",
        ),
        ({"q": "parcel", "limit": "ten"}, "limit", "A valid integer is required."),
        ({"q": "parcel", "mode": "fuzzy"}, "mode", '"fuzzy" is not a valid choice.'),
        ({"q": "parcel", "agent_id": "x" * 256}, "agent_id", None),
        ({"q": "parcel", "thread_id": "a\x00b"}, "thread_id", "Null characters are not allowed."),
    ],
    ids=[
        "no q",
        "empty q",
        "blank q",
        "NUL in q",
        "long q",
        "limit 0",
        "limit 101",
        "limit not a number",
        "unknown mode",
        "long agent id",
        "NUL in a thread id",
    ],
)
def test_bad_input_is_refused_with_the_field_to_blame(
    client: APIClient, params: dict[str, str], field: str, message: str | None
):
    # when
    response = client.get(SEARCH, params)
    # then
    body = assert_error(response, 400, "invalid", [field])
    if message is not None:
        assert body["errors"][field] == [message]


def test_an_anonymous_search_is_refused(anonymous: APIClient, rows: dict[str, str]):
    # when
    response = anonymous.get(SEARCH, {"q": "parcel"})
    # then
    assert_error(response, 401, "not_authenticated")
