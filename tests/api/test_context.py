"""Context builds and recall through the API: within the caller's grants, bad input a 400."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services
from tests.api.conftest import API, Conversation, assert_error

pytestmark = pytest.mark.django_db


def build(client: APIClient, **body: Any) -> Any:
    return client.post(f"{API}/context/", body, format="json")


def recall(client: APIClient, **body: Any) -> Any:
    return client.post(f"{API}/recall/", body, format="json")


def remember(thread_id: str, agent_id: str, user_id: str, value: str, quote_entry: str) -> str:
    """An active item of the user (system trust), quoting an entry."""
    return (
        MemoryItems()
        .write(
            MemoryScope(agent_id, user_id=user_id),
            NewItem(
                kind="fact",
                subject="Parcel",
                attribute="whereabouts",
                value=value,
                trust="system",
                evidence=[NewEvidence(quote="depot", entry_id=quote_entry)],
            ),
        )
        .item.pk
    )


def test_a_recent_context_of_the_active_branch(client: APIClient, conversation: Conversation):
    response = build(
        client,
        thread_id=conversation.thread_id,
        strategy="recent",
        max_tokens=2000,
        system_prompt="You track parcels.",
        current_input="Any news?",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "You track parcels."}
    # the active branch, not the retry of the other one
    history = [message["content"] for message in messages[1:]]
    assert history == ["Where is my parcel?", "It left the depot.", "When will it arrive?"]
    assert messages[-1]["cache_breakpoint"] is True
    assert body["truncated"] is False
    assert body["partitions"]["system"] > 0 and body["partitions"]["final"] > 0
    assert body["token_count"] == sum(
        tokens for name, tokens in body["partitions"].items() if name != "final"
    )
    assert body["errors"] == [] and body["warnings"] == []
    assert body["metadata"]["included_message_count"] == 3


def test_a_small_budget_drops_the_oldest_and_says_so(client: APIClient, conversation: Conversation):
    response = build(
        client,
        thread_id=conversation.thread_id,
        strategy="recent",
        max_tokens=110,
        reserve_tokens=100,
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["truncated"] is True
    assert body["dropped"]["entry_count"] >= 1
    assert conversation.root.pk in body["dropped"]["entry_ids"]
    assert all(block["reason"] in {"budget", "not-selected"} for block in body["dropped"]["blocks"])
    kept = [message["content"] for message in body["messages"]]
    assert "Where is my parcel?" not in kept


def test_another_branch_by_its_leaf(client: APIClient, conversation: Conversation):
    body = build(
        client,
        thread_id=conversation.thread_id,
        strategy="recent",
        max_tokens=2000,
        leaf_id=conversation.retry.pk,
    ).json()
    assert [m["content"] for m in body["messages"]] == ["Where is my parcel?", "Let me check."]


def test_facts_of_the_thread_user_are_in_the_memory_context(
    client: APIClient, conversation: Conversation
):
    remember(conversation.thread_id, "agent-a", "u1", "left the depot", conversation.reply.pk)
    remember(conversation.thread_id, "agent-a", "u2", "SECRET-OF-U2", conversation.reply.pk)
    body = build(
        client,
        thread_id=conversation.thread_id,
        strategy="recent",
        max_tokens=2000,
        include_facts=True,
        current_input="Where is it?",
    ).json()
    assert [fact["value"] for fact in body["facts"]] == ["left the depot"]
    assert "left the depot" in body["memory_context"]
    assert "SECRET-OF-U2" not in str(body)
    assert body["messages"][-1]["role"] == "user"
    assert "<memory_context>" in body["messages"][-1]["content"]


def test_hybrid_recalls_older_turns(client: APIClient, conversation: Conversation):
    thread = conversation.thread_id
    for number in range(30):
        services.add_entry(thread, role="user", content=f"Filler message number {number}.")
    body = build(
        client,
        thread_id=thread,
        strategy="hybrid",
        max_tokens=400,
        reserve_tokens=100,
        current_input="Where did the parcel leave from, the depot?",
    ).json()
    assert body["errors"] == [], body["errors"]
    recalled = [entry["id"] for entry in body["recalled"]["entries"]]
    assert conversation.reply.pk in recalled
    assert "Earlier in this conversation:" in body["memory_context"]


def test_a_thread_of_another_tenant_is_a_404(client: APIClient, foreign_conversation: Conversation):
    assert_error(
        build(client, thread_id=foreign_conversation.thread_id, max_tokens=1000),
        404,
        "thread_not_found",
    )
    assert_error(
        recall(
            client,
            agent_id="agent-a",
            thread_id=foreign_conversation.thread_id,
            input="Where is the invoice?",
        ),
        404,
        "thread_not_found",
    )


def test_a_thread_of_another_agent_or_user_than_named_is_not_found(
    client: APIClient, conversation: Conversation
):
    thread = conversation.thread_id
    for scope in ({"agent_id": "agent-z"}, {"agent_id": "agent-a", "user_id": "u2"}):
        response = recall(client, thread_id=thread, input="parcel", **scope)
        assert response.status_code in {403, 404}, response.json()
    assert_error(
        recall(client, agent_id="agent-a", user_id="u2", thread_id=thread, input="parcel"),
        404,
        "thread_not_found",
    )


def test_a_leaf_of_another_thread_is_refused(
    client: APIClient, conversation: Conversation, foreign_conversation: Conversation
):
    assert_error(
        build(
            client,
            thread_id=conversation.thread_id,
            max_tokens=1000,
            leaf_id=foreign_conversation.reply.pk,
        ),
        404,
        "entry_not_in_thread",
        ("leaf_id",),
    )


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ("thread_id", "max_tokens")),
        ({"max_tokens": 0}, ("max_tokens",)),
        ({"max_tokens": "100"}, ("max_tokens",)),
        ({"max_tokens": 100, "strategy": "newest"}, ("strategy",)),
        (
            {"max_tokens": 100, "partitions": {"facts": {"share": "0.1"}}},
            ("partitions.facts.share",),
        ),
        ({"max_tokens": 100, "partitions": {"facts": {"share": 2}}}, ("partitions.facts.share",)),
        ({"max_tokens": 100, "pinned": "not a list"}, ("pinned",)),
        ({"max_tokens": 100, "as_of": "yesterday"}, ("as_of",)),
    ],
)
def test_bad_input_is_a_400_with_the_fields_to_blame(
    client: APIClient, conversation: Conversation, body: dict[str, Any], fields: tuple[str, ...]
):
    if "thread_id" not in fields:
        body = {"thread_id": conversation.thread_id, **body}
    assert_error(build(client, **body), 400, "invalid", fields)


def test_settings_the_builder_refuses_are_a_400(client: APIClient, conversation: Conversation):
    thread = conversation.thread_id
    over = {"facts": {"share": 0.6}, "recall": {"share": 0.6}}
    body = build(client, thread_id=thread, max_tokens=100, partitions=over).json()
    assert body["code"] == "invalid_context_config", body


def test_relevant_without_an_embedding_service_is_built_as_recent_and_says_so(
    client: APIClient, conversation: Conversation
):
    # given settings that configure no embedding service
    thread = conversation.thread_id
    # when
    response = build(
        client, thread_id=thread, max_tokens=2000, strategy="relevant", current_input="Any news?"
    )
    # then a 200 with the context recent builds, and the fallback in errors
    assert response.status_code == 200, response.json()
    body = response.json()
    recent = build(
        client, thread_id=thread, max_tokens=2000, strategy="recent", current_input="Any news?"
    ).json()
    assert body["messages"] == recent["messages"]
    history = [message["content"] for message in body["messages"]]
    assert history == ["Where is my parcel?", "It left the depot.", "When will it arrive?"]
    assert [error["source"] for error in body["errors"]] == ["relevance"]
    assert "embedding service" in body["errors"][0]["message"]
    assert "built as recent" in body["errors"][0]["message"]


def test_recall_of_a_thread_says_how_the_turn_was_read_and_what_found_each_hit(
    client: APIClient, conversation: Conversation
):
    item = remember(
        conversation.thread_id, "agent-a", "u1", "left the depot", conversation.reply.pk
    )
    response = recall(
        client,
        agent_id="agent-a",
        thread_id=conversation.thread_id,
        input="Where did my parcel leave from?",
        time_zone="Europe/Lisbon",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["analysis"]["search"] is True
    assert "parcel" in body["analysis"]["terms"]
    ids = [hit["id"] for hit in body["hits"]]
    assert item in ids
    for hit in body["hits"]:
        assert hit["channels"], hit
        assert all(channel["rank"] >= 1 for channel in hit["channels"].values())
        assert ("entry" in hit) == (hit["kind"] == "entry")
        assert ("item" in hit) == (hit["kind"] == "item")
    entries = {hit["id"] for hit in body["hits"] if hit["kind"] == "entry"}
    # never a turn of the other branch
    assert conversation.retry.pk not in entries


def test_small_talk_is_not_searched(client: APIClient, conversation: Conversation):
    body = recall(
        client, agent_id="agent-a", thread_id=conversation.thread_id, input="thanks!"
    ).json()
    assert body["analysis"]["search"] is False
    assert body["hits"] == []


def test_recall_of_items_by_agent_and_user_stays_within_grants(
    client: APIClient, make_user: Any, conversation: Conversation
):
    remember(conversation.thread_id, "agent-a", "u1", "left the depot", conversation.reply.pk)
    body = recall(client, agent_id="agent-a", user_id="u1", input="parcel depot").json()
    assert [hit["kind"] for hit in body["hits"]] == ["item"]
    # an agent ana has no grant for
    assert_error(recall(client, agent_id="agent-b", input="invoice"), 403, "permission_denied")
    # a grant naming users: another user, or no user, is refused
    from tests.api.conftest import token_client

    narrow = token_client(make_user("una", {"agent-a": ["u2"]}))
    assert_error(
        recall(narrow, agent_id="agent-a", user_id="u1", input="parcel"), 403, "permission_denied"
    )
    assert_error(recall(narrow, agent_id="agent-a", input="parcel"), 403, "permission_denied")
    mine = recall(narrow, agent_id="agent-a", user_id="u2", input="parcel depot").json()
    assert mine["hits"] == []


def test_a_recall_refused_for_no_user_names_the_field_the_request_used(
    client: APIClient, make_user: Any
):
    # given a grant that names users
    from tests.api.conftest import token_client

    narrow = token_client(make_user("una", {"agent-a": ["u2"]}))
    # when recall names no user_id, then another user's
    no_user = assert_error(
        recall(narrow, agent_id="agent-a", input="parcel"), 403, "permission_denied"
    )
    other = assert_error(
        recall(narrow, agent_id="agent-a", user_id="u1", input="parcel"), 403, "permission_denied"
    )
    # then the refusal asks for user_id, the recall request's field (not a thread's
    # metadata.userId)
    assert no_user["message"] == "Your grant for agent 'agent-a' names users: give user_id."
    assert other["message"] == "You have no grant for user 'u1' of agent 'agent-a'."


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"input": "parcel"}, ("agent_id",)),
        ({"input": "   ", "agent_id": "agent-a"}, ("input",)),
        ({"input": "parcel", "agent_id": "agent-a", "limit": 0}, ("limit",)),
        ({"input": "parcel", "agent_id": 7}, ("agent_id",)),
        ({"input": "parcel", "agent_id": "agent-a", "as_of": "soon"}, ("as_of",)),
    ],
)
def test_bad_recall_input_is_a_400(
    client: APIClient, body: dict[str, Any], fields: tuple[str, ...]
):
    assert_error(recall(client, **body), 400, "invalid", fields)


def test_an_unknown_zone_in_recall_is_a_400(client: APIClient, conversation: Conversation):
    response = recall(
        client,
        agent_id="agent-a",
        thread_id=conversation.thread_id,
        input="parcel",
        time_zone="Mars/Olympus",
    )
    assert response.status_code == 400, response.json()


def test_as_of_reads_items_as_they_stood(client: APIClient, conversation: Conversation):
    remember(conversation.thread_id, "agent-a", "u1", "left the depot", conversation.reply.pk)
    before = datetime(2000, 1, 1, tzinfo=UTC).isoformat()
    body = recall(
        client, agent_id="agent-a", user_id="u1", input="parcel depot", as_of=before
    ).json()
    assert body["hits"] == []


@pytest.mark.parametrize("shared_allowed", [False, True])
def test_search_results_hold_shared_documents_only_where_the_server_allows(
    client: APIClient, conversation: Conversation, settings: Any, shared_allowed: bool
):
    from tests.search.support import CONCEPT_PROVIDER, embeddings_settings, write_text

    settings.COGITATOR_MEMORY = embeddings_settings(
        CONCEPT_PROVIDER, API_SEARCH_SHARED=shared_allowed
    )
    write_text("doc-shared", "SHAREDDOC the invoice terms of every customer")
    write_text("doc-own", "OWNDOC the invoice of agent a", agent="agent-a")
    write_text("doc-other", "OTHERDOC the invoice of agent b", agent="agent-b")
    response = build(
        client,
        thread_id=conversation.thread_id,
        strategy="recent",
        max_tokens=4000,
        include_semantic_context=True,
        current_input="Where is my invoice?",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    found = {hit["source_id"] for hit in body["semantic_results"]}
    assert "doc-own" in found
    assert "doc-other" not in found and "OTHERDOC" not in str(body)
    assert ("doc-shared" in found) is shared_allowed
    assert ("SHAREDDOC" in str(body)) is shared_allowed


def test_graph_context_of_the_nodes_the_input_names(client: APIClient, conversation: Conversation):
    # given active nodes of the thread's user, one of another agent, and a suggestion
    from cogitator_memory.graph import MemoryGraph

    graph = MemoryGraph()
    scope = MemoryScope("agent-a", user_id="u1")
    parcel = graph.add_node(scope, name="Parcel", type="package", trust="system")
    depot = graph.add_node(scope, name="Depot", type="place", trust="system")
    graph.add_edge(scope, source=parcel, target=depot, relation="held_at", trust="system")
    graph.add_node(scope, name="Courier", trust="model")
    graph.add_node(MemoryScope("agent-b", user_id="u9"), name="Parcel", trust="system")
    body = {"thread_id": conversation.thread_id, "strategy": "recent", "max_tokens": 2000}
    # when
    response = build(
        client,
        **body,
        current_input="Where is the parcel? Ask the courier.",
        include_graph_context=True,
        graph_context_options={"depth": 1, "relations": ["held at"]},
    )
    # then
    assert response.status_code == 200, response.json()
    built = response.json()
    assert (
        "Graph context:\n- Parcel (package)\n- Depot (place)\n- Parcel held at Depot\n"
        in (built["memory_context"])
    )
    assert built["metadata"]["graph_nodes_included"] == 2
    assert built["metadata"]["graph_edges_included"] == 1
    assert built["dropped"]["graph_node_ids"] == []
    # and without asking for it there is none
    plain = build(client, **body, current_input="Where is the parcel?").json()
    assert plain["metadata"]["graph_nodes_included"] == 0
    # and what does not fit is named
    tight = build(
        client,
        **{**body, "max_tokens": 20},
        reserve_tokens=0,
        current_input="Where is the parcel?",
        include_graph_context=True,
    ).json()
    assert depot.pk in tight["dropped"]["graph_node_ids"]
    assert len(tight["dropped"]["graph_node_ids"]) == 2 - tight["metadata"]["graph_nodes_included"]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"depth": -1}, "graph_context_options.depth"),
        ({"max_nodes": 0}, "graph_context_options.max_nodes"),
        ({"max_nodes": "3"}, "graph_context_options.max_nodes"),
        ({"relations": []}, "graph_context_options.relations"),
        ({"relations": [""]}, "graph_context_options.relations.0"),
        ("deep", "graph_context_options.non_field_errors"),
    ],
)
def test_bad_graph_context_options_are_a_400(
    client: APIClient, conversation: Conversation, options: Any, field: str
):
    body = {"thread_id": conversation.thread_id, "max_tokens": 100}
    response = build(client, **body, include_graph_context=True, graph_context_options=options)
    assert_error(response, 400, "invalid", [field])
