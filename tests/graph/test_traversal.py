"""Walks of the graph (``MemoryGraph.neighbourhood``, ``shortest_path``): both directions,
bounded by depth and fan-out, filtered by status, relation and valid time, ending on
cycles, and never stepping into another scope."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogitator_memory.exceptions import GraphNodeNotFound, InvalidGraphInput
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphEdge, GraphNode

pytestmark = pytest.mark.django_db

ANA = MemoryScope("concierge", user_id="ana")
graph = MemoryGraph()


def node(name: str, scope: MemoryScope = ANA, trust: str = "system") -> GraphNode:
    return graph.add_node(scope, name=name, trust=trust)


def edge(
    source: GraphNode, target: GraphNode, relation: str = "knows", **fields: object
) -> GraphEdge:
    fields.setdefault("trust", "system")
    return graph.add_edge(
        MemoryScope.of(source), source=source, target=target, relation=relation, **fields
    )  # type: ignore[arg-type]


def names(nodes: list[GraphNode]) -> list[str]:
    return [n.name for n in nodes]


def test_a_neighbourhood_follows_edges_both_ways_up_to_its_depth_through_cycles() -> None:
    # given a cycle a - b - c - a and a tail c -> d -> e
    a, b, c, d, e = (node(name) for name in "abcde")
    edge(a, b)
    edge(b, c)
    edge(c, a)
    edge(d, c)
    edge(d, e)
    # when
    near = graph.neighbourhood(a.pk, depth=2)
    # then
    assert near.depth_of == {a.pk: 0, b.pk: 1, c.pk: 1, d.pk: 2}
    # nearest first, then by id
    by_depth = sorted(near.depth_of, key=lambda pk: (near.depth_of[pk], pk))
    assert [n.pk for n in near.nodes] == by_depth
    assert {(x.source.name, x.target.name) for x in near.edges} == {
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
        ("d", "c"),
    }
    assert graph.neighbourhood(a.pk, depth=0).depth_of == {a.pk: 0}
    assert graph.neighbourhood(a.pk, depth=6).depth_of[e.pk] == 3
    assert len(graph.neighbourhood(a.pk, depth=6, max_nodes=2).nodes) == 2


def test_fan_out_keeps_the_heaviest_edges_of_each_node() -> None:
    hub = node("hub")
    spokes = [node(f"s{i}") for i in range(5)]
    for weight, spoke in enumerate(spokes):
        edge(hub, spoke, weight=float(weight))
    near = graph.neighbourhood(hub.pk, depth=1, fan_out=2)
    assert set(near.depth_of) == {hub.pk, spokes[4].pk, spokes[3].pk}


def test_statuses_relations_and_valid_time_filter_every_hop() -> None:
    a, b, c = node("a"), node("b"), node("c")
    hidden = node("hidden", trust="model")
    edge(a, b, "likes")
    edge(b, c, "works_with", valid_to=datetime(2025, 1, 1, tzinfo=UTC))
    edge(a, hidden)
    guess = edge(c, a, "knows", trust="model")
    assert set(graph.neighbourhood(a.pk).depth_of) == {a.pk, b.pk, c.pk}
    assert set(graph.neighbourhood(a.pk, relations=["Likes"]).depth_of) == {a.pk, b.pk}
    later = datetime(2026, 1, 1, tzinfo=UTC)
    assert set(graph.neighbourhood(a.pk, as_of=later).depth_of) == {a.pk, b.pk}
    # a node that held only later is not reached as of before it began
    graph.update_node(b.pk, valid_from=datetime(2026, 6, 1, tzinfo=UTC))
    assert set(graph.neighbourhood(a.pk, as_of=later).depth_of) == {a.pk}
    assert set(graph.neighbourhood(a.pk, relations=["likes"]).depth_of) == {a.pk, b.pk}
    both = graph.neighbourhood(a.pk, depth=1, statuses=["active", "suggested"])
    assert set(both.depth_of) == {a.pk, b.pk, c.pk, hidden.pk}
    assert guess in both.edges
    with pytest.raises(InvalidGraphInput) as refused:
        graph.neighbourhood(a.pk, depth=9, fan_out=0, statuses=["maybe"])
    assert set(refused.value.errors) == {"depth", "fan_out", "statuses"}


def test_a_walk_never_steps_into_another_scope_or_out_of_grants() -> None:
    a, b = node("a"), node("b")
    edge(a, b)
    shared = MemoryScope("concierge")
    # nodes of the agent-wide scope and of Ben, named alike: never reached from Ana's
    other_a, other_b = node("a", shared), node("b", MemoryScope("concierge", user_id="ben"))
    edge(other_a, node("c", shared))
    assert set(graph.neighbourhood(a.pk, depth=6).depth_of) == {a.pk, b.pk}
    assert graph.shortest_path(a.pk, other_a.pk) is None
    bens = Grants.for_agents(["concierge"], {"concierge": ["ben"]})
    with pytest.raises(GraphNodeNotFound):
        graph.neighbourhood(a.pk, grants=bens)
    with pytest.raises(GraphNodeNotFound):
        graph.shortest_path(other_b.pk, a.pk, grants=bens)


def test_a_shortest_path_lists_its_nodes_and_edges_in_order() -> None:
    a, b, c, d = (node(name) for name in "abcd")
    ab = edge(a, b)
    cb = edge(c, b)
    cd = edge(c, d)
    edge(a, d, "knows", trust="model")
    path = graph.shortest_path(a.pk, d.pk)
    assert path is not None
    assert names(path.nodes) == ["a", "b", "c", "d"]
    assert path.edges == [ab, cb, cd]
    assert path.length == 3
    suggested = graph.shortest_path(a.pk, d.pk, statuses=["active", "suggested"])
    assert suggested is not None and suggested.length == 1
    assert graph.shortest_path(a.pk, d.pk, max_depth=2) is None
    same = graph.shortest_path(a.pk, a.pk)
    assert same is not None and (same.nodes, same.edges) == ([a], [])
