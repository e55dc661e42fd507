"""Merging nodes (``MemoryGraph.merge_nodes``): the node kept takes the others' names,
aliases, properties (its own win), evidence and edges; loops go, duplicate edges fold
into one with all their evidence; all or nothing."""

from __future__ import annotations

import pytest

from cogitator_memory.exceptions import (
    GraphNodeNotFound,
    GraphScopeMismatch,
    InvalidGraphInput,
)
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.items.statements import NewEvidence
from cogitator_memory.threads import services as threads

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
graph = MemoryGraph()


def said(text: str) -> str:
    thread = threads.create_thread("concierge", metadata={"userId": "ana"})
    return threads.add_entry(thread.pk, role="user", content=text).pk


def test_merging_keeps_names_evidence_and_edges_and_folds_duplicates() -> None:
    # given two nodes naming one person, each with quotes and edges
    entry = said("Lena, whom we call Lenchen, works at Acme with Ben.")
    lena = graph.add_node(
        ANA,
        name="Lena",
        aliases=["L."],
        properties={"city": "Porto"},
        evidence=[NewEvidence("Lena", entry)],
    )
    lenchen = graph.add_node(
        ANA,
        name="Lenchen",
        aliases=["Lena", "Lenny"],
        properties={"city": "Faro", "age": 30},
        trust="user",
        evidence=[NewEvidence("Lenchen", entry)],
    )
    acme = graph.add_node(ANA, name="Acme")
    ben = graph.add_node(ANA, name="Ben")
    works = graph.add_edge(
        ANA,
        source=lena,
        target=acme,
        relation="works_at",
        weight=1.0,
        evidence=[NewEvidence("works at Acme", entry)],
    )
    works_too = graph.add_edge(
        ANA,
        source=lenchen,
        target=acme,
        relation="works_at",
        weight=3.0,
        trust="system",
        evidence=[NewEvidence("Acme", entry)],
    )
    knows = graph.add_edge(ANA, source=ben, target=lenchen, relation="knows")
    loop = graph.add_edge(ANA, source=lena, target=lenchen, relation="same_as")
    # when
    kept = graph.merge_nodes(lena.pk, [lenchen.pk])
    # then the node kept has every name, the properties of both (its own win), the trust
    assert kept.pk == lena.pk
    assert kept.aliases == ["L.", "Lenchen", "Lenny"]
    assert kept.properties == {"city": "Porto", "age": 30}
    assert kept.trust == "user"
    assert not GraphNode.objects.filter(pk=lenchen.pk).exists()
    # every quote of both nodes
    assert sorted(GraphEvidence.objects.filter(node=kept).values_list("quote", flat=True)) == [
        "Lena",
        "Lenchen",
    ]
    # the two works_at edges are one, with both quotes, the heavier weight, the active status
    [folded] = GraphEdge.objects.filter(relation="works_at")
    assert folded.pk == works.pk
    assert (folded.source_id, folded.target_id) == (lena.pk, acme.pk)
    assert (folded.weight, folded.status, folded.trust) == (3.0, GraphStatus.ACTIVE, "system")
    assert sorted(GraphEvidence.objects.filter(edge=folded).values_list("quote", flat=True)) == [
        "Acme",
        "works at Acme",
    ]
    assert not GraphEdge.objects.filter(pk=works_too.pk).exists()
    # Ben's edge points at the node kept; the edge between the two is gone (a loop)
    knows.refresh_from_db()
    assert (knows.source_id, knows.target_id) == (ben.pk, lena.pk)
    assert not GraphEdge.objects.filter(pk=loop.pk).exists()


def test_merging_several_nodes_folds_their_edges_to_a_neighbour_into_one() -> None:
    keep, one, two, x = (graph.add_node(ANA, name=name) for name in ("k", "one", "two", "x"))
    first = graph.add_edge(ANA, source=one, target=x, relation="r")
    second = graph.add_edge(ANA, source=two, target=x, relation="r")
    graph.add_edge(ANA, source=x, target=two, relation="r")
    kept = graph.merge_nodes(keep.pk, [one.pk, two.pk])
    assert sorted(kept.aliases) == ["one", "two"]
    edges = sorted(GraphEdge.objects.values_list("source_id", "target_id", "relation"))
    assert edges == sorted([(keep.pk, x.pk, "r"), (x.pk, keep.pk, "r")])
    # of edges that become one, the one of the smallest id stays
    assert GraphEdge.objects.filter(pk=min(first.pk, second.pk)).exists()


def test_a_merge_refuses_nodes_of_other_scopes_itself_and_the_unseen_whole() -> None:
    lena = graph.add_node(ANA, name="Lena")
    twin = graph.add_node(ANA, name="Lenchen")
    bens = graph.add_node(MemoryScope("concierge", user_id="ben"), name="Lena")
    with pytest.raises(GraphScopeMismatch) as refused:
        graph.merge_nodes(lena.pk, [twin.pk, bens.pk])
    assert refused.value.node_ids == [lena.pk, bens.pk]
    with pytest.raises(InvalidGraphInput, match="merged into itself"):
        graph.merge_nodes(lena.pk, [lena.pk])
    with pytest.raises(GraphNodeNotFound):
        graph.merge_nodes(lena.pk, ["gnode_missing"])
    only_ben = Grants.for_agents(["concierge"], {"concierge": ["ben"]})
    with pytest.raises(GraphNodeNotFound):
        graph.merge_nodes(lena.pk, [twin.pk], grants=only_ben)
    ana_only = Grants.for_agents(["concierge"], {"concierge": ["ana"]})
    assert graph.merge_nodes(lena.pk, [], grants=ana_only) == lena
    with pytest.raises(InvalidGraphInput, match="A list of node ids"):
        graph.merge_nodes(lena.pk, twin.pk)  # type: ignore[arg-type]
    # nothing changed
    assert GraphNode.objects.count() == 3
