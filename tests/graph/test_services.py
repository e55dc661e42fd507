"""The knowledge graph's writes and reads (``MemoryGraph``): upserts of nodes and edges by
scope, type and name, the status a write gets by who said it and whether its quotes hold,
changes, typed errors for bad input, and the caller's grants."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogitator_memory.exceptions import (
    GraphEdgeNotFound,
    GraphEdgeTaken,
    GraphNameTaken,
    GraphNodeNotFound,
    GraphScopeMismatch,
    InvalidGraphInput,
    NoGrant,
)
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.items.statements import NewEvidence
from cogitator_memory.lineage import Quote
from cogitator_memory.threads import services as threads

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
BEN = MemoryScope("concierge", user_id="ben")
graph = MemoryGraph()


def said(text: str, *, agent: str = "concierge", user: str = "ana") -> str:
    thread = threads.create_thread(agent, metadata={"userId": user})
    return threads.add_entry(thread.pk, role="user", content=text).pk


# --- nodes ---------------------------------------------------------------------------------


def test_add_nodes_writes_many_in_one_go_each_by_the_rule_of_one() -> None:
    # given a user's words and a model's
    entry = said("My sister Lena lives in Porto with Tom.")
    # when three nodes, one name twice, are written together
    written = graph.add_nodes(
        ANA,
        [
            {
                "name": "Lena",
                "type": "person",
                "trust": "user",
                "evidence": [NewEvidence("My sister Lena", entry)],
            },
            {
                "name": "Porto",
                "type": "place",
                "evidence": [NewEvidence("lives in Porto", entry), NewEvidence("not said", entry)],
            },
            {
                "name": "lena",
                "type": "person",
                "aliases": ["Lenchen"],
                "evidence": [NewEvidence("My sister Lena", entry)],
            },
        ],
    )
    # then each has its own quotes, the status its speaker and quotes give, and the name
    # given twice is one node
    lena, porto, lena_again = written
    assert lena_again.pk == lena.pk and GraphNode.objects.count() == 2
    assert lena_again.aliases == ["Lenchen"] and lena_again.status == GraphStatus.ACTIVE
    assert porto.status == GraphStatus.SUGGESTED
    assert sorted(GraphEvidence.objects.filter(node=porto).values_list("quote", "verified")) == [
        ("lives in Porto", True),
        ("not said", False),
    ]
    assert list(GraphEvidence.objects.filter(node=lena).values_list("quote", flat=True)) == [
        "My sister Lena"
    ]


def test_add_nodes_checks_every_node_first_and_writes_none_when_one_is_wrong() -> None:
    with pytest.raises(InvalidGraphInput) as raised:
        graph.add_nodes(ANA, [{"name": "Lena"}, {"name": " "}, {"name": "x", "colour": "red"}])
    assert set(raised.value.errors) == {"nodes.1.name", "nodes.2"}
    assert GraphNode.objects.count() == 0
    with pytest.raises(InvalidGraphInput) as raised:
        graph.add_nodes(ANA, {"name": "Lena"})  # type: ignore[arg-type]
    assert set(raised.value.errors) == {"nodes"}


def test_a_node_is_one_per_scope_type_and_name_and_merges_what_is_said_again() -> None:
    # given a node written by a model with a quote
    entry = said("My sister Lena lives in Porto.")
    first = graph.add_node(
        ANA,
        name="Lena",
        type="Person",
        aliases=["Lenchen"],
        properties={"city": "Lisbon", "age": 30},
        evidence=[NewEvidence("My sister Lena", entry)],
    )
    # when the same name (other case and spacing) is written again
    again = graph.add_node(
        ANA,
        name="  lena ",
        type="person",
        aliases=["Sis", "lenchen"],
        properties={"city": "Porto"},
        evidence=[Quote("lives in Porto", entry), NewEvidence("My sister Lena", entry)],
    )
    # then it is the same node, with the aliases, properties and quotes of both, each once
    assert again.pk == first.pk
    assert GraphNode.objects.count() == 1
    assert (again.name, again.type, again.key) == ("Lena", "person", "lena")
    assert again.aliases == ["Lenchen", "Sis"]
    assert again.properties == {"city": "Porto", "age": 30}
    quotes = sorted(GraphEvidence.objects.filter(node=again).values_list("quote", "verified"))
    assert quotes == [("My sister Lena", True), ("lives in Porto", True)]
    assert first.pk.startswith("gnode_")
    # and the same name in another scope, or of another type, is another node
    assert graph.add_node(BEN, name="Lena", type="person").pk != first.pk
    assert graph.add_node(ANA, name="Lena", type="city").pk != first.pk


@pytest.mark.parametrize(
    ("trust", "quote", "status"),
    [
        ("system", None, GraphStatus.ACTIVE),
        ("user", "Lena lives in Porto", GraphStatus.ACTIVE),
        ("user", "Lena lives in Faro", GraphStatus.SUGGESTED),
        ("user", None, GraphStatus.SUGGESTED),
        ("model", "Lena lives in Porto", GraphStatus.SUGGESTED),
        ("tool", "Lena lives in Porto", GraphStatus.SUGGESTED),
        ("web", "Lena lives in Porto", GraphStatus.SUGGESTED),
    ],
)
def test_only_the_system_or_the_user_with_quotes_that_hold_is_active_on_its_own(
    trust: str, quote: str | None, status: str
) -> None:
    entry = said("Lena lives in Porto.")
    evidence = [NewEvidence(quote, entry)] if quote else []
    node = graph.add_node(ANA, name="Lena", trust=trust, evidence=evidence)
    assert node.status == status
    other = graph.add_node(ANA, name="Porto")
    edge = graph.add_edge(
        ANA, source=node, target=other, relation="lives in", trust=trust, evidence=evidence
    )
    assert (edge.status, edge.relation) == (status, "lives_in")


def test_a_suggestion_said_again_with_grounds_becomes_active_and_a_rejection_stays() -> None:
    entry = said("Lena lives in Porto.")
    node = graph.add_node(ANA, name="Lena", trust="model")
    assert node.status == GraphStatus.SUGGESTED
    node = graph.add_node(
        ANA, name="Lena", trust="user", evidence=[NewEvidence("Lena lives", entry)]
    )
    assert (node.status, node.trust) == (GraphStatus.ACTIVE, "user")
    # a rejected node stays rejected whoever says it again
    graph.reject_nodes([node.pk])
    assert graph.add_node(ANA, name="Lena", trust="system").status == GraphStatus.REJECTED


def test_a_quote_of_an_entry_of_another_agent_or_out_of_grants_holds_nowhere() -> None:
    elsewhere = said("Lena lives in Porto.", agent="sales")
    bens = said("Lena lives in Porto.", user="ben")
    node = graph.add_node(
        ANA, name="Lena", trust="user", evidence=[NewEvidence("Lena lives", elsewhere)]
    )
    assert node.status == GraphStatus.SUGGESTED
    row = GraphEvidence.objects.get(node=node)
    assert (row.entry_id, row.verified) == (None, False)
    grants = Grants.for_agents(["concierge"], {"concierge": ["ana"]})
    node = graph.add_node(
        ANA, name="Porto", trust="user", evidence=[NewEvidence("Lena", bens)], grants=grants
    )
    assert node.status == GraphStatus.SUGGESTED


def test_bad_input_is_refused_with_every_bad_field_and_nothing_written() -> None:
    with pytest.raises(InvalidGraphInput) as refused:
        graph.add_node(
            ANA,
            name=" ",
            type="",
            aliases="Lena",
            properties={"x": object()},
            trust="friend",
            evidence=["a quote"],
            valid_from=datetime(2026, 1, 1),
        )
    assert set(refused.value.errors) == {
        "name",
        "type",
        "aliases",
        "properties",
        "trust",
        "evidence",
        "valid_from",
    }
    assert refused.value.errors["trust"] == [
        "Unknown trust 'friend'; expected one of system, user, model, tool, web."
    ]
    with pytest.raises(InvalidGraphInput, match="valid_to must come after valid_from"):
        graph.add_node(
            ANA,
            name="Lena",
            valid_from=datetime(2026, 2, 1, tzinfo=UTC),
            valid_to=datetime(2026, 1, 1, tzinfo=UTC),
        )
    with pytest.raises(InvalidGraphInput, match="A scope is a MemoryScope"):
        graph.add_node("concierge", name="Lena")  # type: ignore[arg-type]
    with pytest.raises(InvalidGraphInput, match="entity"):
        graph.add_node(ANA, name="Lena", entity="ent_missing")
    assert not GraphNode.objects.exists()


def test_a_write_where_the_grants_do_not_reach_is_refused() -> None:
    grants = Grants.for_agents(["concierge"], {"concierge": ["ben"]})
    with pytest.raises(NoGrant):
        graph.add_node(ANA, name="Lena", grants=grants)
    assert not GraphNode.objects.exists()


# --- edges ---------------------------------------------------------------------------------


def test_an_edge_is_one_per_ends_and_relation_and_merges_what_is_said_again() -> None:
    lena = graph.add_node(ANA, name="Lena", trust="system")
    porto = graph.add_node(ANA, name="Porto", trust="system")
    edge = graph.add_edge(
        ANA, source=lena.pk, target=porto, relation="Lives-In", properties={"since": 2020}
    )
    again = graph.add_edge(
        ANA, source=lena, target=porto, relation="lives in", weight=2.5, properties={"a": 1}
    )
    assert again.pk == edge.pk
    assert (again.relation, again.weight, again.properties) == (
        "lives_in",
        2.5,
        {"since": 2020, "a": 1},
    )
    # the other direction is another edge
    assert graph.add_edge(ANA, source=porto, target=lena, relation="lives_in").pk != edge.pk
    assert GraphEdge.objects.count() == 2


def test_an_edge_never_joins_nodes_of_two_scopes_or_a_node_to_itself() -> None:
    lena = graph.add_node(ANA, name="Lena")
    bens = graph.add_node(BEN, name="Porto")
    with pytest.raises(GraphScopeMismatch) as refused:
        graph.add_edge(ANA, source=lena, target=bens, relation="knows")
    assert refused.value.node_ids == [lena.pk, bens.pk]
    assert "different scopes" in refused.value.errors["target"][0]
    with pytest.raises(GraphScopeMismatch):
        graph.add_edge(BEN, source=lena, target=lena, relation="knows")
    with pytest.raises(InvalidGraphInput, match="two different nodes"):
        graph.add_edge(ANA, source=lena, target=lena, relation="knows")
    with pytest.raises(GraphNodeNotFound, match="gnode_missing"):
        graph.add_edge(ANA, source=lena, target="gnode_missing", relation="knows")
    with pytest.raises(InvalidGraphInput) as bad:
        graph.add_edge(ANA, source=lena, target=bens, relation="", weight=float("nan"))
    assert set(bad.value.errors) == {"relation", "weight"}
    assert not GraphEdge.objects.exists()


def test_a_node_out_of_grants_is_not_found() -> None:
    lena = graph.add_node(ANA, name="Lena")
    porto = graph.add_node(ANA, name="Porto")
    bens = Grants.for_agents(["concierge"], {"concierge": ["ben"]})
    with pytest.raises(GraphNodeNotFound):
        graph.get_node(lena.pk, grants=bens)
    # a write into a scope out of grants is refused before any id is looked up
    with pytest.raises(NoGrant):
        graph.add_edge(ANA, source=lena, target=porto, relation="knows", grants=bens)
    with pytest.raises(GraphNodeNotFound):
        graph.add_edge(BEN, source=lena, target=porto, relation="knows", grants=bens)
    assert graph.get_node(lena.pk, grants=Grants.for_agents(["concierge"])) == lena
    assert list(graph.nodes(grants=bens)) == []


# --- changes -------------------------------------------------------------------------------


def test_a_node_changes_its_fields_and_evidence_but_never_its_status() -> None:
    entry = said("Lena moved to Faro.")
    lena = graph.add_node(ANA, name="Lena", aliases=["Lenchen"], evidence=[Quote("Lena", entry)])
    changed = graph.update_node(
        lena.pk,
        name="Lena Costa",
        aliases=["Lena", "lenchen"],
        properties={"city": "Faro"},
        evidence=[NewEvidence("moved to Faro", entry)],
    )
    assert (changed.name, changed.key, changed.aliases) == (
        "Lena Costa",
        "lena costa",
        ["Lena", "lenchen"],
    )
    assert changed.properties == {"city": "Faro"}
    assert changed.status == GraphStatus.SUGGESTED
    assert list(GraphEvidence.objects.filter(node=lena).values_list("quote", flat=True)) == [
        "moved to Faro"
    ]
    other = graph.add_node(ANA, name="Ana")
    with pytest.raises(GraphNameTaken) as taken:
        graph.update_node(other.pk, name="lena costa")
    assert taken.value.node_id == lena.pk
    with pytest.raises(InvalidGraphInput) as refused:
        graph.update_node(lena.pk, status="active", key="x")
    assert set(refused.value.errors) == {"status", "key"}
    with pytest.raises(GraphNodeNotFound):
        graph.update_node("gnode_missing", name="x")


def test_an_edge_changes_its_fields_and_refuses_the_relation_of_another() -> None:
    lena = graph.add_node(ANA, name="Lena")
    porto = graph.add_node(ANA, name="Porto")
    lives = graph.add_edge(ANA, source=lena, target=porto, relation="lives_in")
    works = graph.add_edge(ANA, source=lena, target=porto, relation="works_in")
    changed = graph.update_edge(lives.pk, weight=0.5, properties={"since": 2021})
    assert (changed.weight, changed.properties) == (0.5, {"since": 2021})
    with pytest.raises(GraphEdgeTaken) as taken:
        graph.update_edge(lives.pk, relation="Works in")
    assert taken.value.edge_id == works.pk
    with pytest.raises(GraphEdgeNotFound):
        graph.update_edge("gedge_missing", weight=1)
    with pytest.raises(InvalidGraphInput):
        graph.update_edge(lives.pk, weight=-1)


# --- reads ---------------------------------------------------------------------------------


def test_nodes_and_edges_are_read_by_scope_type_status_and_name() -> None:
    lena = graph.add_node(ANA, name="Lena Costa", type="person", trust="system")
    porto = graph.add_node(ANA, name="Porto", type="city")
    shared = graph.add_node(MemoryScope("concierge"), name="Lisbon", type="city")
    graph.add_node(BEN, name="Ben", type="person")
    edge = graph.add_edge(ANA, source=lena, target=porto, relation="lives_in")
    assert list(graph.nodes(scope=ANA)) == [lena, shared, porto]
    assert list(graph.nodes(scope=ANA, type="City")) == [shared, porto]
    assert list(graph.nodes(scope=ANA, status="active")) == [lena]
    assert list(graph.nodes(search="COSTA")) == [lena]
    assert list(graph.edges(node=porto)) == [edge]
    assert list(graph.edges(scope=BEN)) == []
    assert list(graph.edges(relation="lives in", status=["suggested"])) == [edge]
    with pytest.raises(InvalidGraphInput):
        graph.nodes(status="maybe")
