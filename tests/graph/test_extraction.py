"""Relations extraction finds become suggested edges (and nodes) of the graph, standing on
their quotes; an answer without relations reads as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.extraction import write_extracted_relations
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.items.extraction_prompt import EXTRACTION_PROMPT, parse_extraction
from cogitator_memory.items.models import MemoryItem
from cogitator_memory.items.thread_windows import extract_thread
from cogitator_memory.items.window_extractor import MemoryExtractor
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.threads import services as threads
from cogitator_memory.threads.models import Entry

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")


@pytest.fixture
def said() -> list[Entry]:
    thread = threads.create_thread("concierge", {"userId": "ana"})
    return [
        threads.add_entry(thread.pk, role="user", content="My sister Lena works at Acme."),
        threads.add_entry(thread.pk, role="user", content="Acme is based in Porto."),
    ]


def answer(*relations: dict[str, Any]) -> str:
    return json.dumps(
        [
            {
                "kind": "fact",
                "subject": "Lena",
                "attribute": "employer",
                "value": "Acme",
                "confidence": 0.9,
                "quotes": [{"message": 1, "text": "Lena works at Acme"}],
                "relations": list(relations),
            }
        ]
    )


def relation(target: str, kind: str, quote: str, message: int, **more: Any) -> dict[str, Any]:
    return {"relation": kind, "target": target, "quote": quote, "message": message, **more}


def edges() -> list[tuple[str, str, str, str, str]]:
    return sorted(
        (e.source.name, e.relation, e.target.name, e.status, e.trust)
        for e in GraphEdge.objects.select_related("source", "target")
    )


def test_relations_become_suggested_edges_standing_on_their_quotes(said: list[Entry]) -> None:
    # given a model that names two relations (one with its own source) and a bad one
    model = ScriptedModel(
        [
            answer(
                relation("Acme", "works at", "Lena works at Acme", 1),
                relation("Porto", "based in", "Acme is based in Porto", 2, source="Acme"),
                relation("Mars", "lives on", "not said anywhere", 2),
                relation("Oslo", "visits", "Lena works at Acme", 7),
                {"relation": "knows", "target": "Ben"},
            )
        ]
    )
    run = MemoryExtractor(summarize=model, write_relations=write_extracted_relations)
    # when
    result = run.extract(said, scope=ANA)
    # then the item is written as before, and the relations with a quote of the window
    assert MemoryItem.objects.count() == 1
    assert result.relations == 3
    assert edges() == [
        ("Acme", "based_in", "Porto", GraphStatus.SUGGESTED, "model"),
        ("Lena", "lives_on", "Mars", GraphStatus.SUGGESTED, "model"),
        ("Lena", "works_at", "Acme", GraphStatus.SUGGESTED, "model"),
    ]
    assert set(GraphNode.objects.values_list("status", flat=True)) == {GraphStatus.SUGGESTED}
    assert GraphNode.objects.filter(user_id="ana").count() == 4
    works = GraphEdge.objects.get(relation="works_at")
    assert list(GraphEvidence.objects.filter(edge=works).values_list("entry_id", "verified")) == [
        (said[0].pk, True)
    ]
    # a quote that does not hold in its message is kept, unverified (the rule of items)
    mars = GraphEdge.objects.get(relation="lives_on")
    assert list(GraphEvidence.objects.filter(edge=mars).values_list("verified", flat=True)) == [
        False
    ]


def test_a_relation_to_a_known_node_joins_it(said: list[Entry]) -> None:
    from cogitator_memory.graph import MemoryGraph

    lena = MemoryGraph().add_node(ANA, name="Lena", type="person", trust="system")
    model = ScriptedModel([answer(relation("ACME", "works at", "Lena works at Acme", 1))])
    MemoryExtractor(summarize=model, write_relations=write_extracted_relations).extract(
        said, scope=ANA
    )
    edge = GraphEdge.objects.get()
    assert edge.source_id == lena.pk and edge.target.name == "ACME"
    # the known node keeps its status: a relation never changes it
    lena.refresh_from_db()
    assert lena.status == GraphStatus.ACTIVE


def test_without_the_seam_or_without_relations_nothing_reaches_the_graph(
    said: list[Entry],
) -> None:
    model = ScriptedModel([answer(relation("Acme", "works at", "Lena works at Acme", 1))])
    MemoryExtractor(summarize=model).extract(said, scope=ANA)
    assert not GraphEdge.objects.exists() and not GraphNode.objects.exists()
    old = ScriptedModel([answer()])
    result = MemoryExtractor(summarize=old, write_relations=write_extracted_relations).extract(
        said, scope=ANA
    )
    assert result.relations == 0 and not GraphEdge.objects.exists()


def test_a_thread_extraction_writes_relations_in_the_windows_transaction(
    said: list[Entry],
) -> None:
    model = ScriptedModel([answer(relation("Acme", "works at", "Lena works at Acme", 1))])
    extract_thread(said[0].thread_id, summarize=model, write_relations=write_extracted_relations)
    assert edges() == [("Lena", "works_at", "Acme", GraphStatus.SUGGESTED, "model")]


def test_the_prompt_asks_for_relations_and_old_answers_parse_as_before() -> None:
    assert '"relations"' in EXTRACTION_PROMPT
    parsed = parse_extraction(
        '[{"kind": "fact", "subject": "Lena", "attribute": "job", "value": "nurse",'
        ' "quotes": [{"message": 1, "text": "nurse"}]}]'
    )
    assert [item.relations for item in parsed.items] == [()]
    bad = parse_extraction(
        '[{"kind": "fact", "subject": "Lena", "attribute": "job", "value": "nurse",'
        ' "relations": [{"relation": "knows", "target": "Lena", "quote": "x", "message": 1},'
        ' {"relation": 3, "target": "Ben", "quote": "x", "message": 1},'
        ' {"relation": "knows", "target": "Ben", "quote": "x", "message": true}, "Ben"]}]'
    )
    assert [item.relations for item in bad.items] == [()]
