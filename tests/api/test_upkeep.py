"""Upkeep of a scope through the API: refresh observations and consolidate start a run in the
background (202, Location, joined while queued), its status is read back, a scope outside
the grants is refused before anything is written, and no model is a clear 409."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from cogitator_memory.upkeep.records import UpkeepRun, UpkeepWork
from tests.api.conftest import API, Principal, assert_error

pytestmark = pytest.mark.django_db

MODEL: dict[str, Any] = {"LLM": {"PROVIDER": "scripted"}}
SCOPE = {"agent_id": "agent-a", "user_id": "ana"}


@pytest.fixture(autouse=True)
def a_model(settings: Any) -> None:
    settings.COGITATOR_MEMORY = MODEL


@pytest.mark.parametrize(
    ("route", "work"),
    [
        ("observations/refresh/", UpkeepWork.OBSERVATIONS),
        ("consolidation/", UpkeepWork.CONSOLIDATION),
    ],
)
def test_upkeep_is_started_in_the_background_and_joined_while_queued(
    client: APIClient, route: str, work: str
) -> None:
    response = client.post(f"{API}/{route}", SCOPE, format="json")
    assert response.status_code == 202, response.json()
    run = response.json()
    assert run["work"] == work and run["status"] == "queued"
    assert (run["agent_id"], run["user_id"], run["project_id"]) == ("agent-a", "ana", None)
    assert response["Location"].endswith(f"{API}/upkeep-runs/{run['id']}/")
    again = client.post(f"{API}/{route}", SCOPE, format="json")
    assert again.status_code == 202 and again.json()["id"] == run["id"]
    status = client.get(f"{API}/upkeep-runs/{run['id']}/")
    assert status.status_code == 200
    assert status.json() == run
    assert UpkeepRun.objects.count() == 1


def test_a_scope_outside_the_grants_is_refused_and_nothing_is_written(
    client: APIClient,
) -> None:
    response = client.post(f"{API}/consolidation/", {"agent_id": "agent-b"}, format="json")
    assert_error(response, 403, "permission_denied")
    assert UpkeepRun.objects.count() == 0


def test_a_run_of_another_principal_reads_as_missing(
    client: APIClient, service_b: Principal
) -> None:
    theirs = service_b.client.post(
        f"{API}/consolidation/", {"agent_id": "agent-b", "user_id": "u"}, format="json"
    )
    assert theirs.status_code == 202
    assert_error(
        client.get(f"{API}/upkeep-runs/{theirs.json()['id']}/"), 404, "upkeep_run_not_found"
    )


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["agent_id"]),
        ({"agent_id": "  "}, ["agent_id"]),
        ({"agent_id": "agent-a", "user_id": 7}, ["user_id"]),
        ({"agent_id": "agent-a", "thread_id": "x" * 300}, ["thread_id"]),
    ],
)
def test_bad_scopes_are_400_with_the_field(
    client: APIClient, body: dict[str, Any], fields: list[str]
) -> None:
    assert_error(
        client.post(f"{API}/observations/refresh/", body, format="json"), 400, "invalid", fields
    )
    assert UpkeepRun.objects.count() == 0


def test_without_a_model_upkeep_is_off_and_says_so(client: APIClient, settings: Any) -> None:
    settings.COGITATOR_MEMORY = {}
    response = client.post(f"{API}/consolidation/", SCOPE, format="json")
    body = assert_error(response, 409, "llm_unavailable")
    assert "no model is configured" in body["message"]
    assert UpkeepRun.objects.count() == 0
