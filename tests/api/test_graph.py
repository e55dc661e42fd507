"""The knowledge graph API: nodes and edges written with the caller's trust, their lists,
changes and deletion, reviews, merging, neighbourhoods and shortest paths; bad input is a
400 naming the field, a row out of the grants a 404."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient
from rest_framework_api_key.models import APIKey

from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.items.statements import NewEvidence
from tests.api.conftest import (
    API,
    Conversation,
    api_key_client,
    assert_error,
    token_client,
)

pytestmark = pytest.mark.django_db

NODES = f"{API}/graph/nodes/"
EDGES = f"{API}/graph/edges/"
PATH = f"{API}/graph/path/"
MERGE = f"{API}/graph/nodes/merge/"
U1 = MemoryScope("agent-a", user_id="u1")
FOREIGN = MemoryScope("agent-b", user_id="u9")
REVIEWS = ("activate_graphnode", "reject_graphnode", "activate_graphedge", "reject_graphedge")


def node(name: str, scope: MemoryScope = U1, **fields: Any) -> GraphNode:
    fields.setdefault("trust", "system")
    return MemoryGraph().add_node(scope, name=name, **fields)


def edge(source: GraphNode, target: GraphNode, relation: str, **fields: Any) -> GraphEdge:
    fields.setdefault("trust", "system")
    return MemoryGraph().add_edge(
        MemoryScope.of(source), source=source, target=target, relation=relation, **fields
    )


def reviewer(make_user: Callable[..., User], *codenames: str, name: str = "rev") -> APIClient:
    user = make_user(name, {"agent-a": None})
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return token_client(user)


def ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


@pytest.fixture
def key_client(make_api_key: Callable[..., tuple[APIKey, str]]) -> APIClient:
    """A program's API key granted agent-a."""
    _api_key, key = make_api_key("service-a", {"agent-a": None})
    return api_key_client(key)


# --- writing nodes ----------------------------------------------------------------------


def test_a_person_writes_a_node_with_a_quote_that_holds_and_it_is_active(
    client: APIClient, conversation: Conversation
) -> None:
    # given
    body = {
        "agent_id": "agent-a",
        "user_id": "u1",
        "name": "The  Depot",
        "type": "Place",
        "aliases": ["warehouse"],
        "properties": {"city": "Porto"},
        "evidence": [{"quote": "left the depot", "entry_id": conversation.reply.pk}],
    }
    # when
    response = client.post(NODES, body, format="json")
    # then
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["name"], data["type"], data["trust"], data["status"]) == (
        "The Depot",
        "place",
        "user",
        "active",
    )
    assert data["aliases"] == ["warehouse"]
    assert data["properties"] == {"city": "Porto"}
    [quote] = data["evidence"]
    assert quote["verified"] is True
    assert (quote["entry_id"], quote["thread_id"]) == (
        conversation.reply.pk,
        conversation.thread_id,
    )
    assert GraphNode.objects.get(pk=data["id"]).user_id == "u1"


def test_a_programs_node_stays_suggested_even_with_a_quote_that_holds(
    key_client: APIClient, conversation: Conversation
) -> None:
    # given
    quote = {"quote": "left the depot", "entry_id": conversation.reply.pk}
    body = {"agent_id": "agent-a", "user_id": "u1", "name": "Depot", "evidence": [quote]}
    # when
    response = key_client.post(NODES, body, format="json")
    # then
    assert response.status_code == 201, response.json()
    assert (response.json()["trust"], response.json()["status"]) == ("model", "suggested")
    assert response.json()["evidence"][0]["verified"] is True


def test_writing_the_same_name_again_merges_into_the_node_with_200(client: APIClient) -> None:
    # given
    first = client.post(
        NODES, {"agent_id": "agent-a", "name": "Ana", "aliases": ["A."]}, format="json"
    )
    # when
    second = client.post(
        NODES, {"agent_id": "agent-a", "name": " ana ", "aliases": ["Annie"]}, format="json"
    )
    # then
    assert (first.status_code, second.status_code) == (201, 200)
    assert second.json()["id"] == first.json()["id"]
    assert second.json()["aliases"] == ["A.", "Annie"]
    assert GraphNode.objects.count() == 1


def test_a_quote_of_another_tenants_entry_stands_on_nothing(
    client: APIClient, foreign_conversation: Conversation
) -> None:
    # given
    quote = {"quote": "left the depot", "entry_id": foreign_conversation.reply.pk}
    # when
    response = client.post(
        NODES, {"agent_id": "agent-a", "name": "Depot", "evidence": [quote]}, format="json"
    )
    # then: kept as a quote of no entry, which does not hold, and names nothing of theirs
    assert response.status_code == 201, response.json()
    [shown] = response.json()["evidence"]
    assert shown["verified"] is False and "entry_id" not in shown
    assert GraphEvidence.objects.get().entry_id is None


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"agent_id": "agent-a"}, ["name"]),
        ({"agent_id": "agent-a", "name": "   "}, ["name"]),
        ({"agent_id": "agent-a", "name": "x" * 256}, ["name"]),
        ({"agent_id": "agent-a", "name": 5}, ["name"]),
        ({"name": "Ana"}, ["agent_id"]),
        ({"agent_id": "agent-a", "name": "Ana", "aliases": "Annie"}, ["aliases"]),
        ({"agent_id": "agent-a", "name": "Ana", "properties": []}, ["properties"]),
        (
            {"agent_id": "agent-a", "name": "Ana", "evidence": [{"entry_id": "e"}]},
            ["evidence.0.quote"],
        ),
        (
            {
                "agent_id": "agent-a",
                "name": "Ana",
                "valid_from": "2025-02-01T00:00:00Z",
                "valid_to": "2025-01-01T00:00:00Z",
            },
            ["valid_to"],
        ),
        ({"agent_id": "agent-a", "name": "Ana", "entity_id": "ent_missing"}, ["entity_id"]),
        ({"agent_id": "agent-a", "name": "Ana", "trust": "system"}, []),
    ],
)
def test_bad_nodes_are_refused_naming_the_field_and_nothing_is_written(
    client: APIClient, body: dict[str, Any], fields: list[str]
) -> None:
    # when
    response = client.post(NODES, body, format="json")
    # then
    if not fields:
        # A trust in the body is not the caller's to give: ignored, the node is the user's.
        assert response.status_code == 201 and response.json()["trust"] == "user"
        return
    assert response.status_code == 400, response.json()
    assert sorted(response.json()["errors"]) == fields
    assert not GraphNode.objects.exists()


def test_a_node_under_an_agent_not_granted_is_refused_with_403(client: APIClient) -> None:
    # when
    response = client.post(NODES, {"agent_id": "agent-b", "name": "Ana"}, format="json")
    # then
    assert_error(response, 403, "permission_denied")
    assert not GraphNode.objects.exists()


# --- reading and listing nodes ----------------------------------------------------------


def test_the_list_holds_the_visible_nodes_and_filters_them(client: APIClient) -> None:
    # given
    ana = node("Ana", type="person", aliases=["Annie"])
    porto = node("Porto", type="place", trust="model")
    shared = node("Concierge", MemoryScope("agent-a"))
    node("Ana", FOREIGN)
    # when / then
    assert set(ids(client.get(NODES))) == {ana.pk, porto.pk, shared.pk}
    assert ids(client.get(NODES, {"type": "person"})) == [ana.pk]
    assert ids(client.get(NODES, {"status": "suggested"})) == [porto.pk]
    assert ids(client.get(NODES, {"search": "ann"})) == [ana.pk]
    assert set(ids(client.get(NODES, {"user_id": "u1"}))) == {ana.pk, porto.pk}
    assert ids(client.get(NODES, {"agent_id": "agent-b"})) == []


def test_the_list_pages_by_id(client: APIClient) -> None:
    # given
    made = sorted(node(f"N{n}").pk for n in range(5))
    seen: list[str] = []
    url: str | None = f"{NODES}?limit=2"
    # when
    while url:
        page = client.get(url).json()
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    # then
    assert seen == made


@pytest.mark.parametrize(
    "query",
    [{"status": "active,gone"}, {"limit": "0"}, {"cursor": "bad cursor"}, {"type": " "}],
)
def test_bad_list_filters_are_400(client: APIClient, query: dict[str, str]) -> None:
    # when
    response = client.get(NODES, query)
    # then
    assert_error(response, 400, "invalid", list(query))


def test_a_node_out_of_the_grants_reads_as_a_missing_one(client: APIClient) -> None:
    # given
    theirs = node("Ana", FOREIGN)
    # when
    answers = [
        client.get(f"{NODES}{theirs.pk}/"),
        client.get(f"{NODES}gnode_missing/"),
        client.patch(f"{NODES}{theirs.pk}/", {"name": "Mine"}, format="json"),
        client.delete(f"{NODES}{theirs.pk}/"),
        client.get(f"{NODES}{theirs.pk}/neighbourhood/"),
    ]
    # then
    for response in answers:
        assert_error(response, 404, "graph_node_not_found")
    assert GraphNode.objects.get(pk=theirs.pk).name == "Ana"


# --- changing and deleting -------------------------------------------------------------


def test_a_node_is_changed_and_its_quotes_replaced(
    client: APIClient, conversation: Conversation
) -> None:
    # given
    ana = node("Ana", properties={"a": 1})
    quote = {"quote": "Where is my parcel?", "entry_id": conversation.root.pk}
    # when
    response = client.patch(
        f"{NODES}{ana.pk}/",
        {"name": "Ana Lima", "properties": {"b": 2}, "evidence": [quote]},
        format="json",
    )
    # then
    assert response.status_code == 200, response.json()
    data = response.json()
    assert (data["name"], data["properties"]) == ("Ana Lima", {"b": 2})
    assert [row["quote"] for row in data["evidence"]] == ["Where is my parcel?"]
    assert data["status"] == "active"


def test_renaming_a_node_to_the_name_of_another_is_409(client: APIClient) -> None:
    # given
    ana = node("Ana")
    node("Bea")
    # when
    response = client.patch(f"{NODES}{ana.pk}/", {"name": "bea"}, format="json")
    # then
    assert_error(response, 409, "graph_name_taken")
    assert GraphNode.objects.get(pk=ana.pk).name == "Ana"


def test_deleting_a_node_takes_its_edges_and_evidence(
    client: APIClient, conversation: Conversation
) -> None:
    # given
    ana = node("Ana")
    depot = node("Depot")
    edge(ana, depot, "visited", evidence=[NewEvidence("It left the depot.", conversation.reply.pk)])
    # when
    response = client.delete(f"{NODES}{depot.pk}/")
    # then
    assert response.status_code == 204
    assert list(GraphNode.objects.values_list("pk", flat=True)) == [ana.pk]
    assert not GraphEdge.objects.exists() and not GraphEvidence.objects.exists()


# --- edges -----------------------------------------------------------------------------


def test_an_edge_is_written_in_its_nodes_scope_and_listed(client: APIClient) -> None:
    # given
    ana, porto = node("Ana"), node("Porto")
    # when
    response = client.post(
        EDGES,
        {"source": ana.pk, "target": porto.pk, "relation": "Lives in", "weight": 2},
        format="json",
    )
    again = client.post(
        EDGES, {"source": ana.pk, "target": porto.pk, "relation": "lives_in"}, format="json"
    )
    # then
    assert (response.status_code, again.status_code) == (201, 200), response.json()
    data = response.json()
    assert (data["relation"], data["agent_id"], data["user_id"], data["status"]) == (
        "lives_in",
        "agent-a",
        "u1",
        "suggested",
    )
    assert ids(client.get(EDGES, {"node": porto.pk})) == [data["id"]]
    assert ids(client.get(EDGES, {"relation": "works at"})) == []
    assert client.get(f"{EDGES}{data['id']}/").json()["evidence"] == []


@pytest.mark.parametrize(
    ("which", "field"),
    [("missing", "target"), ("foreign", "target"), ("other_scope", "target"), ("self", "target")],
)
def test_bad_edges_are_400_naming_the_field(client: APIClient, which: str, field: str) -> None:
    # given
    ana = node("Ana")
    targets = {
        "missing": "gnode_missing",
        "foreign": node("Porto", FOREIGN).pk,
        "other_scope": node("Porto", MemoryScope("agent-a", user_id="u2")).pk,
        "self": ana.pk,
    }
    # when
    response = client.post(
        EDGES, {"source": ana.pk, "target": targets[which], "relation": "knows"}, format="json"
    )
    # then
    body = response.json()
    assert response.status_code == 400, body
    assert list(body["errors"]) == [field]
    assert not GraphEdge.objects.exists()


def test_an_unseen_source_reads_as_a_missing_one(client: APIClient) -> None:
    # given
    theirs, mine = node("Ana", FOREIGN), node("Porto")
    # when
    answers = [
        client.post(EDGES, {"source": source, "target": mine.pk, "relation": "r"}, format="json")
        for source in (theirs.pk, "gnode_missing")
    ]
    # then
    bodies = [assert_error(answer, 400, "invalid_graph_input", ["source"]) for answer in answers]
    assert bodies[0]["message"].replace(theirs.pk, "X") == bodies[1]["message"].replace(
        "gnode_missing", "X"
    )


def test_an_edge_is_changed_and_deleted(client: APIClient) -> None:
    # given
    knows = edge(node("Ana"), node("Bea"), "knows")
    # when
    changed = client.patch(
        f"{EDGES}{knows.pk}/", {"relation": "Works with", "weight": 0.5}, format="json"
    )
    deleted = client.delete(f"{EDGES}{knows.pk}/")
    # then
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["relation"], changed.json()["weight"]) == ("works_with", 0.5)
    assert deleted.status_code == 204
    assert not GraphEdge.objects.exists() and GraphNode.objects.count() == 2


# --- reviews ---------------------------------------------------------------------------


def test_a_reviewer_activates_and_rejects_nodes_and_edges(
    make_user: Callable[..., User],
) -> None:
    # given
    rev = reviewer(make_user, *REVIEWS)
    ana, bea = node("Ana", trust="model"), node("Bea", trust="model")
    knows = edge(ana, bea, "knows", trust="model")
    # when
    activated = rev.post(f"{NODES}{ana.pk}/activate/")
    rejected = rev.post(f"{EDGES}{knows.pk}/reject/", {"reason": "made up"}, format="json")
    twice = rev.post(f"{NODES}{ana.pk}/activate/")
    # then
    assert activated.json()["status"] == "active"
    assert rejected.json()["status"] == "rejected"
    assert_error(twice, 409, "graph_node_not_reviewable")
    assert LogEntry.objects.filter(change_message="rejected: made up (API)").count() == 1


def test_reviews_are_refused_to_api_keys_and_need_a_reason(
    key_client: APIClient, make_user: Callable[..., User]
) -> None:
    # given
    ana = node("Ana", trust="model")
    rev = reviewer(make_user, *REVIEWS)
    # when
    by_key = key_client.post(f"{NODES}{ana.pk}/activate/")
    without_reason = rev.post(f"{NODES}{ana.pk}/reject/", {}, format="json")
    # then
    assert_error(by_key, 403, "review_not_permitted")
    assert_error(without_reason, 400, "invalid", ["reason"])
    assert GraphNode.objects.get(pk=ana.pk).status == "suggested"


def test_a_review_of_a_node_out_of_the_grants_is_404_before_the_permission(
    key_client: APIClient,
) -> None:
    # given
    theirs = node("Ana", FOREIGN, trust="model")
    # when
    response = key_client.post(f"{NODES}{theirs.pk}/activate/")
    # then
    assert_error(response, 404, "graph_node_not_found")


# --- merging ---------------------------------------------------------------------------


def test_merging_moves_names_and_edges_into_the_node_kept(client: APIClient) -> None:
    # given
    ana, annie, porto = node("Ana"), node("Annie", aliases=["A."]), node("Porto")
    edge(annie, porto, "lives_in")
    # when
    response = client.post(MERGE, {"keep": ana.pk, "merge": [annie.pk]}, format="json")
    # then
    assert response.status_code == 200, response.json()
    assert response.json()["aliases"] == ["Annie", "A."]
    assert not GraphNode.objects.filter(pk=annie.pk).exists()
    assert GraphEdge.objects.get().source_id == ana.pk


@pytest.mark.parametrize("which", ["itself", "missing", "foreign", "other_scope", "empty"])
def test_bad_merges_are_400_and_change_nothing(client: APIClient, which: str) -> None:
    # given
    ana = node("Ana")
    merge = {
        "itself": [ana.pk],
        "missing": ["gnode_missing"],
        "foreign": [node("Bea", FOREIGN).pk],
        "other_scope": [node("Bea", MemoryScope("agent-a")).pk],
        "empty": [],
    }[which]
    before = sorted(GraphNode.objects.values_list("pk", flat=True))
    # when
    response = client.post(MERGE, {"keep": ana.pk, "merge": merge}, format="json")
    # then
    assert response.status_code == 400, response.json()
    assert list(response.json()["errors"]) == ["merge"]
    assert sorted(GraphNode.objects.values_list("pk", flat=True)) == before


def test_a_merge_into_a_node_out_of_the_grants_names_keep(client: APIClient) -> None:
    # given
    theirs, mine = node("Ana", FOREIGN), node("Ana")
    # when
    response = client.post(MERGE, {"keep": theirs.pk, "merge": [mine.pk]}, format="json")
    # then
    assert_error(response, 400, "invalid_graph_input", ["keep"])
    assert GraphNode.objects.count() == 2


# --- walks -----------------------------------------------------------------------------


def chain() -> list[GraphNode]:
    """a - b - c - d, active, and a suggested edge a - d."""
    nodes = [node(name) for name in "abcd"]
    for first, second in itertools.pairwise(nodes):
        edge(first, second, "next")
    edge(nodes[0], nodes[3], "guess", trust="model")
    return nodes


def test_a_neighbourhood_by_depth_relation_and_status(client: APIClient) -> None:
    # given
    a, b, _c, d = chain()
    url = f"{NODES}{a.pk}/neighbourhood/"
    # when
    near = client.get(url, {"depth": 1}).json()
    wide = client.get(url, {"depth": 3, "status": "active,suggested", "relations": "guess"}).json()
    # then
    assert [(row["id"], row["depth"]) for row in near["nodes"]] == [(a.pk, 0), (b.pk, 1)]
    assert [row["relation"] for row in near["edges"]] == ["next"]
    assert [(row["id"], row["depth"]) for row in wide["nodes"]] == [(a.pk, 0), (d.pk, 1)]


@pytest.mark.parametrize(
    "query",
    [{"depth": "7"}, {"depth": "-1"}, {"max_nodes": "0"}, {"status": "all"}, {"relations": "a b"}],
)
def test_a_neighbourhood_out_of_bounds_is_400(client: APIClient, query: dict[str, str]) -> None:
    # given
    a = node("a")
    # when
    response = client.get(f"{NODES}{a.pk}/neighbourhood/", query)
    # then
    assert_error(response, 400, "invalid", list(query))


def test_the_shortest_path_and_none(client: APIClient) -> None:
    # given
    a, b, c, d = chain()
    lone = node("lone")
    # when
    found = client.get(PATH, {"source": a.pk, "target": d.pk}).json()
    bounded = client.get(PATH, {"source": a.pk, "target": d.pk, "max_depth": 2}).json()
    guessed = client.get(
        PATH, {"source": a.pk, "target": d.pk, "status": "active,suggested"}
    ).json()
    none = client.get(PATH, {"source": a.pk, "target": lone.pk}).json()
    # then
    assert [row["id"] for row in found["nodes"]] == [a.pk, b.pk, c.pk, d.pk]
    assert (found["found"], found["length"], len(found["edges"])) == (True, 3, 3)
    assert bounded == {"found": False, "length": None, "nodes": [], "edges": []}
    assert guessed["length"] == 1
    assert none["found"] is False


def test_a_path_to_a_node_out_of_the_grants_is_400_on_the_field(client: APIClient) -> None:
    # given
    mine, theirs = node("a"), node("b", FOREIGN)
    # when
    answers = [
        client.get(PATH, {"source": mine.pk, "target": theirs.pk}),
        client.get(PATH, {"source": "gnode_missing", "target": mine.pk}),
        client.get(PATH, {"source": mine.pk, "target": mine.pk, "max_depth": "9"}),
    ]
    # then
    assert_error(answers[0], 400, "invalid_graph_input", ["target"])
    assert_error(answers[1], 400, "invalid_graph_input", ["source"])
    assert_error(answers[2], 400, "invalid", ["max_depth"])
