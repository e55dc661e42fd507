"""A reviewer's activation of items makes nodes of their subjects, in its transaction."""

from __future__ import annotations

import pytest

from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph.models import GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem
from cogitator_memory.threads import services as threads

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")


def suggest(subject: str, value: str, entry_id: str) -> str:
    new = NewItem(
        kind="fact",
        subject=subject,
        attribute=value,
        value=value,
        trust="model",
        confidence=0.9,
        subject_kind="Person",
        evidence=[NewEvidence(value, entry_id)],
    )
    return MemoryItems().write(ANA, new).item.pk


def test_activating_items_makes_active_nodes_of_their_subjects_with_their_quotes() -> None:
    # given two suggestions about Lena and one about Ben
    thread = threads.create_thread("concierge", metadata={"userId": "ana"})
    entry = threads.add_entry(thread.pk, role="assistant", content="Lena lives in Porto; Ben too.")
    first = suggest("Lena", "lives in Porto", entry.pk)
    suggest("Ben", "lives in Porto", entry.pk)
    assert not GraphNode.objects.exists()
    # when a reviewer activates Lena's item
    MemoryItems().activate([first], grants=Grants.for_agents(["concierge"]))
    # then Lena, and only Lena, is a node of the scope, standing on the item's quote
    [node] = GraphNode.objects.all()
    assert (node.name, node.type, node.status, node.trust, node.user_id) == (
        "Lena",
        "person",
        GraphStatus.ACTIVE,
        "model",
        "ana",
    )
    assert node.entity is not None and node.entity.name == "Lena"
    assert list(GraphEvidence.objects.filter(node=node).values_list("entry_id", "quote")) == [
        (entry.pk, "lives in Porto")
    ]
    # and activating again adds nothing
    MemoryItems().activate([first])
    assert GraphNode.objects.count() == 1 and GraphEvidence.objects.count() == 1


def test_a_rejected_node_stays_rejected_when_its_items_are_activated() -> None:
    thread = threads.create_thread("concierge", metadata={"userId": "ana"})
    entry = threads.add_entry(thread.pk, role="assistant", content="Lena lives in Porto.")
    item = suggest("Lena", "lives in Porto", entry.pk)
    MemoryItems().activate([item])
    GraphNode.objects.update(status=GraphStatus.REJECTED)
    MemoryItems().activate([item])
    assert list(GraphNode.objects.values_list("status", flat=True)) == [GraphStatus.REJECTED]
