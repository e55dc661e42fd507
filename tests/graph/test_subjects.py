"""Nodes of what active memory items are about (``MemoryGraph.sync_subjects``)."""

from __future__ import annotations

import pytest

from cogitator_memory.exceptions import NoGrant
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.items.models import Entity
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services as threads

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
graph = MemoryGraph()


def said(text: str) -> str:
    thread = threads.create_thread("concierge", metadata={"userId": "ana"})
    return threads.add_entry(thread.pk, role="user", content=text).pk


def write(subject: str, value: str, trust: str, *, entry: str | None = None, **fields: str) -> str:
    evidence = [NewEvidence(value, entry)] if entry else []
    new = NewItem(
        kind="fact",
        subject=subject,
        attribute=fields.pop("attribute", value),
        value=value,
        trust=trust,
        confidence=0.9,
        evidence=evidence,
        **fields,
    )
    return MemoryItems().write(ANA, new).item.pk


def test_each_subject_of_an_active_item_gets_an_active_node_with_the_items_quotes() -> None:
    # given active items about Lena (two) and the user, and a suggestion about Ben
    entry = said("Lena lives in Porto and works at Acme.")
    write("Lena", "lives in Porto", "user", entry=entry, subject_kind="Person")
    write("Lena", "works at Acme", "system", entry=entry, subject_kind="Person")
    write("user", "likes tea", "system")
    write("Ben", "plays chess", "model")
    lena = Entity.objects.get(name="Lena")
    lena.aliases = ["Lenchen"]
    lena.save()
    # when
    nodes = graph.sync_subjects(ANA)
    # then
    assert [(n.name, n.type, n.status, n.trust) for n in nodes] == [
        ("Lena", "person", GraphStatus.ACTIVE, "system"),
        ("user", "entity", GraphStatus.ACTIVE, "system"),
    ]
    node = nodes[0]
    assert (node.entity_id, node.aliases) == (lena.pk, ["Lenchen"])
    assert (node.agent_id, node.user_id) == ("concierge", "ana")
    quotes = sorted(GraphEvidence.objects.filter(node=node).values_list("quote", "verified"))
    assert quotes == [("lives in Porto", True), ("works at Acme", True)]
    # and syncing again adds nothing new
    again = graph.sync_subjects(ANA)
    assert [n.pk for n in again] == [n.pk for n in nodes]
    assert GraphEvidence.objects.filter(node=node).count() == 2
    assert GraphNode.objects.count() == 2


def test_a_rejected_node_stays_rejected_and_grants_are_checked() -> None:
    write("Lena", "lives in Porto", "system")
    [node] = graph.sync_subjects(ANA)
    graph.reject_nodes([node.pk])
    [again] = graph.sync_subjects(ANA)
    assert again.status == GraphStatus.REJECTED
    with pytest.raises(NoGrant):
        graph.sync_subjects(ANA, grants=Grants.for_agents(["sales"]))
    assert graph.sync_subjects(MemoryScope("concierge", user_id="ben")) == []
