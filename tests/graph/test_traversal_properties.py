"""Walks of the graph agree with networkx on random small graphs: with cycles, several
relations, suggested nodes and edges, a second scope named alike, and rows joining the
two scopes written past the services (which refuse them), ``neighbourhood`` (the nodes
within the depth and their distances) and ``shortest_path`` (its length, and that it is a
path of the filtered graph) give networkx's answers on the same filtered graph."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import networkx as nx
import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphEdge, GraphNode, GraphStatus
from tests.examples import examples

HOME = MemoryScope("concierge", user_id="ana")
AWAY = MemoryScope("concierge", user_id="ben")
RELATIONS = ("knows", "likes", "works_with")
graph = MemoryGraph()


@dataclass(frozen=True)
class Shape:
    home: list[bool]  # per node of HOME: active (else suggested)
    away: int  # nodes of AWAY
    edges: list[tuple[int, int, str, bool]]  # HOME node indexes, relation, active
    away_edges: list[tuple[int, int]]
    strays: list[tuple[int, int]]  # a HOME node joined to an AWAY one, past the services


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    home = draw(st.lists(st.booleans(), min_size=2, max_size=7))
    away = draw(st.integers(1, 3))
    pairs = st.tuples(
        st.integers(0, len(home) - 1),
        st.integers(0, len(home) - 1),
        st.sampled_from(RELATIONS),
        st.booleans(),
    ).filter(lambda edge: edge[0] != edge[1])
    edges = draw(st.lists(pairs, max_size=14, unique_by=lambda edge: edge[:3]))
    away_pairs = st.tuples(st.integers(0, away - 1), st.integers(0, away - 1)).filter(
        lambda pair: pair[0] != pair[1]
    )
    away_edges = draw(st.lists(away_pairs, max_size=3, unique=True))
    strays = draw(
        st.lists(
            st.tuples(st.integers(0, len(home) - 1), st.integers(0, away - 1)),
            max_size=2,
            unique=True,
        )
    )
    return Shape(home, away, edges, away_edges, strays)


@dataclass(frozen=True)
class Walk:
    start: int
    target: int
    depth: int
    statuses: tuple[str, ...]
    relations: tuple[str, ...] | None


walks = st.builds(
    Walk,
    start=st.integers(0, 6),
    target=st.integers(0, 9),
    depth=st.integers(0, 4),
    statuses=st.sampled_from([("active",), ("active", "suggested")]),
    relations=st.one_of(
        st.none(), st.lists(st.sampled_from(RELATIONS), min_size=1, unique=True).map(tuple)
    ),
)


def build(shape: Shape) -> tuple[list[GraphNode], list[GraphNode], list[GraphEdge]]:
    home = [
        graph.add_node(HOME, name=f"n{i}", trust="system" if active else "model")
        for i, active in enumerate(shape.home)
    ]
    away = [graph.add_node(AWAY, name=f"n{i}", trust="system") for i in range(shape.away)]
    edges = [
        graph.add_edge(
            HOME,
            source=home[i],
            target=home[j],
            relation=relation,
            trust="system" if active else "model",
            weight=float(i + j),
        )
        for i, j, relation, active in shape.edges
    ]
    for i, j in shape.away_edges:
        graph.add_edge(AWAY, source=away[i], target=away[j], relation="knows", trust="system")
    for i, j in shape.strays:
        GraphEdge.objects.create(
            **HOME.as_fields(),
            scope_key=home[i].scope_key,
            source=home[i],
            target=away[j],
            relation="knows",
            trust="system",
            status=GraphStatus.ACTIVE,
        )
    return home, away, edges


def expected_graph(
    home: list[GraphNode], edges: list[GraphEdge], start: GraphNode, walk: Walk
) -> nx.Graph:
    """The graph the walk may follow: HOME's nodes and edges of the statuses and
    relations asked for (the start always among the nodes)."""
    expected = nx.Graph()
    expected.add_nodes_from(n.pk for n in home if n.status in walk.statuses or n == start)
    for edge in edges:
        if edge.status not in walk.statuses:
            continue
        if walk.relations is not None and edge.relation not in walk.relations:
            continue
        if edge.source_id in expected and edge.target_id in expected:
            expected.add_edge(edge.source_id, edge.target_id)
    return expected


@pytest.mark.django_db
@settings(
    max_examples=examples(60, 30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(shape=shapes(), walk=walks)
def test_walks_agree_with_networkx(shape: Shape, walk: Walk) -> None:
    with transaction.atomic():
        home, away, edges = build(shape)
        start = home[walk.start % len(home)]
        everyone = home + away
        target = everyone[walk.target % len(everyone)]
        expected = expected_graph(home, edges, start, walk)

        near = graph.neighbourhood(
            start.pk,
            depth=walk.depth,
            max_nodes=1000,
            fan_out=1000,
            statuses=walk.statuses,
            relations=walk.relations,
        )
        assert near.depth_of == nx.single_source_shortest_path_length(
            expected, start.pk, cutoff=walk.depth
        )
        # the edges given are edges of the filtered graph among the nodes found
        for edge in near.edges:
            assert expected.has_edge(edge.source_id, edge.target_id)
            assert {edge.source_id, edge.target_id} <= set(near.depth_of)

        max_depth = max(walk.depth, 1)
        path = graph.shortest_path(
            start.pk,
            target.pk,
            max_depth=max_depth,
            statuses=walk.statuses,
            relations=walk.relations,
        )
        reachable = target.pk in expected and nx.has_path(expected, start.pk, target.pk)
        length = nx.shortest_path_length(expected, start.pk, target.pk) if reachable else None
        if length is None or length > max_depth:
            assert path is None
        else:
            assert path is not None and path.length == length
            ids = [n.pk for n in path.nodes]
            assert (ids[0], ids[-1]) == (start.pk, target.pk)
            for (first, second), edge in zip(pairwise(ids), path.edges, strict=True):
                assert {edge.source_id, edge.target_id} == {first, second}
                assert expected.has_edge(first, second)
        transaction.set_rollback(True)
