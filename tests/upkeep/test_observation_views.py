"""Observations where people and runs meet them: a context build, the API, the admin."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.test import Client
from rest_framework.test import APIClient

from cogitator_memory.access.models import Grant
from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import ContextBuilderConfig, ContextBuilderDeps
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemKind, MemoryItem, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.threads import services as threads
from cogitator_memory.upkeep import MemoryObservations

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
API = "/api/memory"


def fact(
    attribute: str, value: str, *, subject: str = "Ana", scope: MemoryScope = ANA
) -> MemoryItem:
    return (
        MemoryItems()
        .write(
            scope,
            NewItem(
                kind=ItemKind.FACT,
                subject=subject,
                attribute=attribute,
                value=value,
                content=f"{subject} {attribute}: {value}",
                trust=Trust.SYSTEM,
            ),
        )
        .item
    )


def observed(scope: MemoryScope = ANA, subject: str = "Ana") -> list[MemoryItem]:
    """Three facts about ``subject`` in ``scope`` and its observation, naming two."""
    diet = fact("diet", "vegetarian", subject=subject, scope=scope)
    allergy = fact("allergy", "peanuts", subject=subject, scope=scope)
    home = fact("home city", "Lisbon", subject=subject, scope=scope)
    entity = diet.subject
    entity.aliases = ["Aninha"] if subject == "Ana" else []
    entity.save()
    model = ScriptedModel(
        [
            json.dumps(
                [
                    {
                        "text": f"{subject} eats no meat and no peanuts.",
                        "items": [diet.pk, allergy.pk],
                    }
                ]
            )
        ]
    )
    MemoryObservations().refresh(scope, summarize=model)
    return [diet, allergy, home]


# --- the context builder ---------------------------------------------------------------


def build(input: str) -> str | None:
    thread = threads.create_thread("concierge", {"userId": "ana"})
    builder = ContextBuilder(
        ContextBuilderConfig(max_tokens=2000, include_facts=False),
        ContextBuilderDeps(observations=MemoryObservations(), message_index=False),
    )
    return builder.build(thread.pk, "concierge", user_id="ana", current_input=input).memory_context


def test_a_turn_naming_an_entity_or_another_name_of_it_gets_its_observation() -> None:
    observed()
    line = "- Ana: Ana eats no meat and no peanuts."
    assert line in (build("What should I cook for Aninha?") or "")
    assert line in (build("Is ana coming?") or "")
    # a name inside another word is not a name
    assert build("Is Anabela coming?") is None


def test_the_api_builds_contexts_with_observations(admin_user: User) -> None:
    observed()
    thread = threads.create_thread("concierge", {"userId": "ana"})
    client = APIClient()
    client.force_authenticate(admin_user)
    body = {"thread_id": thread.pk, "max_tokens": 2000, "current_input": "Dinner for Ana?"}
    response = client.post(f"{API}/context/", body, format="json")
    assert response.status_code == 200, response.json()
    assert "Ana eats no meat and no peanuts." in (response.json()["memory_context"] or "")


# --- the API ---------------------------------------------------------------------------


def api_client(agent: str, users: list[str] | None) -> APIClient:
    user = User.objects.create_user(f"caller-{agent}-{users}", password="pw")
    Grant.objects.create(user=user, agent_id=agent, user_ids=users)
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_lists_the_observations_of_exactly_the_scope_with_their_items() -> None:
    diet, allergy, _home = observed()
    observed(MemoryScope("concierge"), subject="Hotel")
    client = api_client("concierge", ["ana"])
    response = client.get(f"{API}/observations/", {"agent_id": "concierge", "user_id": "ana"})
    assert response.status_code == 200, response.json()
    [row] = response.json()["results"]
    assert (row["name"], row["aliases"], row["item_ids"]) == (
        "Ana",
        ["Aninha"],
        [diet.pk, allergy.pk],
    )
    assert row["text"] == "Ana eats no meat and no peanuts." and row["author"] == "memory"
    assert row["entity_id"] == diet.subject_id and row["path"].startswith("/memories/observations/")


def test_the_api_lists_nothing_beyond_the_grants_and_refuses_bad_input() -> None:
    observed()
    bob = api_client("concierge", ["bob"])
    response = bob.get(f"{API}/observations/", {"agent_id": "concierge", "user_id": "ana"})
    assert response.status_code == 200 and response.json()["results"] == []
    bad = bob.get(f"{API}/observations/", {"user_id": "   "})
    assert bad.status_code == 400
    assert set(bad.json()["errors"]) == {"agent_id", "user_id"}


# --- the admin -------------------------------------------------------------------------


def staff(users: list[str] | None) -> Client:
    user = User.objects.create_user(f"staff-{users}", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_entity", "view_memoryitem"])
    )
    Grant.objects.create(user=user, agent_id="concierge", user_ids=users)
    client = Client()
    client.force_login(user)
    return client


def test_an_entitys_page_shows_its_observation_and_the_items_it_stands_on() -> None:
    diet, allergy, home = observed()
    MemoryItems().mark_stale([allergy.pk], {"reason": "duplicate"})
    page = staff(["ana"]).get(f"/admin/cogitator_memory/entity/{quote(diet.subject_id)}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Ana eats no meat and no peanuts." in html
    assert f"/admin/cogitator_memory/memoryitem/{quote(diet.pk)}/change/" in html
    assert f"/admin/cogitator_memory/memoryitem/{quote(allergy.pk)}/change/" in html
    assert "(active)" in html and "(stale)" in html
    assert home.pk not in html


def test_an_entity_beyond_the_staff_users_grants_is_not_shown() -> None:
    diet, _allergy, _home = observed()
    page = staff(["bob"]).get(f"/admin/cogitator_memory/entity/{quote(diet.subject_id)}/change/")
    assert page.status_code in (302, 404)
    assert "eats no meat" not in page.content.decode()
