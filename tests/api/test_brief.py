"""The pre-turn brief through the API: cards drawn from what recall finds within the
caller's grants, bad input a 400, no model a 409; and a context built with a brief."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem
from cogitator_memory.llm.registry import get_summarizer
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.upkeep.brief import BRIEF_HEADING
from tests.api.conftest import API, Conversation, assert_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def model(settings: Any) -> Iterator[ScriptedModel]:
    settings.COGITATOR_MEMORY = {"LLM": {"PROVIDER": "scripted"}}
    summarizer = get_summarizer()
    assert isinstance(summarizer, ScriptedModel)
    yield summarizer


def brief(client: APIClient, **body: Any) -> Any:
    return client.post(f"{API}/brief/", body, format="json")


def remember(agent_id: str, user_id: str, content: str) -> str:
    return (
        MemoryItems()
        .write(
            MemoryScope(agent_id, user_id=user_id),
            NewItem(
                kind="fact",
                subject="Parcel",
                attribute="whereabouts",
                value="depot",
                content=content,
                trust="system",
            ),
        )
        .item.pk
    )


def cards_answer(*cards: tuple[str, str, str, str]) -> str:
    return json.dumps(
        [dict(zip(("kind", "text", "quote", "source"), c, strict=True)) for c in cards]
    )


def test_a_turn_is_briefed_from_the_callers_memory(
    client: APIClient, conversation: Conversation, model: ScriptedModel
) -> None:
    # given an item of the thread's user, and one of agent-b with the same words
    item = remember("agent-a", "u1", "The parcel waits at the depot in Porto")
    other = remember("agent-b", "u9", "The parcel waits at the depot in Faro")
    model.add(
        cards_answer(
            ("knowledge", "It is in Porto.", "waits at the depot", f"item:{item}"),
            ("knowledge", "It is in Faro.", "depot in Faro", f"item:{other}"),
        )
    )
    # when
    response = brief(
        client,
        agent_id="agent-a",
        thread_id=conversation.thread_id,
        input="Where is my parcel waiting?",
        max_cards=2,
    )
    # then
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["cards"] == [
        {
            "kind": "knowledge",
            "text": "It is in Porto.",
            "quote": "waits at the depot",
            "source": f"item:{item}",
        }
    ]
    assert body["block"].startswith(BRIEF_HEADING)
    [call] = model.calls
    assert "Faro" not in call.messages[0]["content"]
    assert call.max_tokens == 600


def test_bad_input_is_a_400_with_its_fields(client: APIClient, model: ScriptedModel) -> None:
    for bad in (0, 5, "2", True):
        assert_error(
            brief(client, agent_id="agent-a", input="parcel", max_cards=bad),
            400,
            "invalid",
            ["max_cards"],
        )
    assert_error(brief(client, agent_id="agent-a", input="  "), 400, "invalid", ["input"])
    assert_error(brief(client, input="parcel"), 400, "invalid", ["agent_id"])
    assert model.calls == []


def test_without_a_model_the_brief_is_off(client: APIClient, conversation: Conversation) -> None:
    response = brief(client, agent_id="agent-a", user_id="u1", input="parcel")
    assert_error(response, 409, "llm_unavailable")


def test_another_agents_memory_is_refused_before_anything_is_asked(
    client: APIClient, foreign_conversation: Conversation, model: ScriptedModel
) -> None:
    assert_error(brief(client, agent_id="agent-b", input="invoice"), 403, "permission_denied")
    response = brief(
        client, agent_id="agent-a", thread_id=foreign_conversation.thread_id, input="invoice"
    )
    assert_error(response, 404, "thread_not_found")
    assert model.calls == []


def test_nothing_found_asks_nothing(client: APIClient, model: ScriptedModel) -> None:
    body = brief(client, agent_id="agent-a", user_id="u1", input="Which wine tonight?").json()
    assert body == {"cards": [], "block": ""}
    assert model.calls == []


def test_a_context_built_with_brief_cards(
    client: APIClient, conversation: Conversation, model: ScriptedModel
) -> None:
    # given an item recall finds for the turn
    item = remember("agent-a", "u1", "The parcel waits at the depot in Porto")
    model.add(cards_answer(("knowledge", "It is in Porto.", "depot in Porto", f"item:{item}")))
    # when
    response = client.post(
        f"{API}/context/",
        {
            "thread_id": conversation.thread_id,
            "strategy": "hybrid",
            "max_tokens": 2000,
            "include_facts": False,
            "current_input": "Where is my parcel waiting?",
            "brief_cards": 1,
        },
        format="json",
    )
    # then
    assert response.status_code == 200, response.json()
    body = response.json()
    assert [card["source"] for card in body["brief_cards"]] == [f"item:{item}"]
    assert BRIEF_HEADING in body["memory_context"]
    assert len(model.calls) == 1
    # and brief_cards is 0 to 4; without a model a brief is refused by name
    bad = {"thread_id": conversation.thread_id, "max_tokens": 2000, "brief_cards": 5}
    assert_error(
        client.post(f"{API}/context/", bad, format="json"), 400, "invalid", ["brief_cards"]
    )


def test_a_context_asking_for_a_brief_without_a_model(
    client: APIClient, conversation: Conversation
) -> None:
    body = {"thread_id": conversation.thread_id, "max_tokens": 2000, "brief_cards": 2}
    assert_error(client.post(f"{API}/context/", body, format="json"), 409, "llm_unavailable")
    plain = client.post(f"{API}/context/", {**body, "brief_cards": 0}, format="json").json()
    assert plain["brief_cards"] == []
