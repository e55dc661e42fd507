"""The knowledge graph as graph context (``MemoryGraphContext``): the nodes a turn names,
their neighbourhoods within the options, only active rows of the run's scope, lines that do
not fit left out with a reason."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogitator_memory.context.builder import ContextBuilder
from cogitator_memory.context.config import (
    ContextBuilderConfig,
    ContextBuilderDeps,
    GraphContextOptions,
)
from cogitator_memory.context.graph_source import MemoryGraphContext
from cogitator_memory.exceptions import InvalidContextConfig
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphNode
from cogitator_memory.graph.names_in_text import named_in
from tests.context.support import AGENT, USER, new_thread

pytestmark = pytest.mark.django_db

ANA = MemoryScope(AGENT, user_id=USER)
graph = MemoryGraph()


def node(
    name: str, type: str = "person", *, scope: MemoryScope = ANA, **fields: object
) -> GraphNode:
    trust = fields.pop("trust", "system")
    return graph.add_node(scope, name=name, type=type, trust=trust, **fields)  # type: ignore[arg-type]


def edge(source: GraphNode, relation: str, target: GraphNode, **fields: object) -> None:
    trust = fields.pop("trust", "system")
    graph.add_edge(
        MemoryScope.of(source),
        source=source,
        target=target,
        relation=relation,
        trust=trust,  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


def build(text: str, *, max_tokens: int = 1000, **config: object):  # type: ignore[no-untyped-def]
    thread = new_thread()
    settings = ContextBuilderConfig(
        max_tokens=max_tokens,
        include_graph_context=True,
        **config,  # type: ignore[arg-type]
    )
    deps = ContextBuilderDeps(graph=MemoryGraphContext())
    return ContextBuilder(settings, deps).build(thread, AGENT, user_id=USER, current_input=text)


@pytest.fixture
def family() -> dict[str, GraphNode]:
    """Lena works at Acme, which is in Porto, which is in Portugal; Lena knows Ben."""
    nodes = {
        "lena": node("Lena", aliases=["Lenchen"]),
        "acme": node("Acme", "company"),
        "porto": node("Porto", "city"),
        "portugal": node("Portugal", "country"),
        "ben": node("Ben"),
    }
    edge(nodes["lena"], "works_at", nodes["acme"])
    edge(nodes["acme"], "located_in", nodes["porto"])
    edge(nodes["porto"], "located_in", nodes["portugal"])
    edge(nodes["lena"], "knows", nodes["ben"])
    return nodes


def lines(context) -> list[str]:  # type: ignore[no-untyped-def]
    return [line.text for line in [*context.graph_context.nodes, *context.graph_context.edges]]


def test_the_nodes_a_turn_names_come_first_then_the_nearest_with_the_edges_among_them(
    family: dict[str, GraphNode],
) -> None:
    # when the turn names Lena by an alias
    context = build("Where does lenchen work these days?")
    # then
    assert lines(context) == [
        "Lena (person; also Lenchen)",
        "Acme (company)",
        "Ben (person)",
        "Porto (city)",
        "Lena knows Ben",
        "Lena works at Acme",
        "Acme located in Porto",
    ]
    assert context.metadata.graph_nodes_included == 4
    assert context.metadata.graph_edges_included == 3
    assert "Graph context:\n- Lena (person; also Lenchen)\n" in context.memory_context


def test_the_options_bound_the_depth_the_nodes_and_the_relations(
    family: dict[str, GraphNode],
) -> None:
    one_hop = build("Tell me about Lena", graph_context_options={"depth": 1})
    assert [line.text for line in one_hop.graph_context.nodes] == [
        "Lena (person; also Lenchen)",
        "Acme (company)",
        "Ben (person)",
    ]
    two = build("Tell me about Lena", graph_context_options=GraphContextOptions(max_nodes=2))
    # the walk keeps the nearest nodes (among equals, by id)
    first, second = [line.payload for line in two.graph_context.nodes]
    assert first == family["lena"] and second in (family["acme"], family["ben"])
    assert [line.text for line in two.graph_context.edges] == [
        "Lena works at Acme" if second == family["acme"] else "Lena knows Ben"
    ]
    places = build(
        "What of Acme and Lena?",
        graph_context_options={"depth": 3, "relations": ["located in"]},
    )
    # the named nodes in the order the turn names them, then along located_in only
    assert lines(places) == [
        "Acme (company)",
        "Lena (person; also Lenchen)",
        "Porto (city)",
        "Portugal (country)",
        "Acme located in Porto",
        "Porto located in Portugal",
    ]


def test_only_active_nodes_and_edges_of_the_runs_scope_valid_at_as_of(
    family: dict[str, GraphNode],
) -> None:
    # given a suggestion, a node of another user, and an edge that no longer holds
    guess = node("Carla", trust="model")
    edge(family["ben"], "married_to", guess, trust="model")
    node("Lena", scope=MemoryScope(AGENT, user_id="someone-else"))
    ended = datetime(2026, 1, 1, tzinfo=UTC)
    edge(family["ben"], "lives_in", family["porto"], valid_to=ended)
    # when
    context = build("What about Ben and Carla?", graph_context_options={"depth": 1})
    # then
    assert lines(context) == ["Ben (person)", "Lena (person; also Lenchen)", "Lena knows Ben"]
    # and before the end the edge held
    thread = new_thread("ana-2")
    config = ContextBuilderConfig(
        max_tokens=1000, include_graph_context=True, graph_context_options={"depth": 1}
    )
    earlier = ContextBuilder(config, ContextBuilderDeps(graph=MemoryGraphContext())).build(
        thread,
        AGENT,
        user_id=USER,
        current_input="What about Ben?",
        as_of=datetime(2025, 6, 1, tzinfo=UTC),
    )
    assert "Ben lives in Porto" in lines(earlier)


def test_grants_that_do_not_reach_the_scope_see_no_graph(family: dict[str, GraphNode]) -> None:
    source = MemoryGraphContext()
    context = source.graph_context(
        agent_id=AGENT,
        user_id=USER,
        input="Lena",
        as_of=datetime.now(UTC),
        grants=Grants.for_agents(["sales"]),
    )
    assert (list(context.nodes), list(context.edges)) == ([], [])
    seen = source.graph_context(
        agent_id=AGENT,
        user_id=USER,
        input="Lena",
        as_of=datetime.now(UTC),
        grants=Grants.for_agents([AGENT]),
    )
    assert [line.id for line in seen.nodes][:1] == [family["lena"].pk]


def test_graph_lines_that_do_not_fit_are_left_out_with_a_reason(
    family: dict[str, GraphNode],
) -> None:
    # given a budget of a few lines
    context = build("Lena?", max_tokens=40, reserve_tokens=0)
    # then the first lines are sent and the rest are reported
    kept = context.metadata.graph_nodes_included
    assert (kept, context.metadata.graph_edges_included) == (3, 0)
    dropped_ids = [n.pk for n in context.dropped.graph_nodes]
    assert dropped_ids == [line.id for line in context.graph_context.nodes][kept:]
    reasons = {
        block.source_id: block.reason
        for block in context.dropped.blocks
        if block.partition == "recall"
    }
    assert len(dropped_ids) == 1
    assert all(reasons[node_id] == "budget" for node_id in dropped_ids)


def test_names_are_found_as_whole_words_case_and_punctuation_aside() -> None:
    nodes = [("1", "Ana", []), ("2", "New York", ["NYC"]), ("3", "Anabel", [])]
    assert named_in("Did ana fly to new   york (NYC)?", nodes) == ["1", "2"]
    assert named_in("Banana", nodes) == []


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"depth": -1}, "graph_context_options.depth"),
        ({"depth": 99}, "graph_context_options.depth"),
        ({"max_nodes": 0}, "graph_context_options.max_nodes"),
        ({"max_nodes": "5"}, "graph_context_options.max_nodes"),
        ({"relations": []}, "graph_context_options.relations"),
        ({"relations": [""]}, "graph_context_options.relations"),
        ({"width": 3}, "graph_context_options.width"),
        ("deep", "graph_context_options"),
    ],
)
def test_bad_graph_context_options_are_refused(options: object, field: str) -> None:
    with pytest.raises(InvalidContextConfig) as caught:
        ContextBuilderConfig(max_tokens=100, graph_context_options=options)  # type: ignore[arg-type]
    assert list(caught.value.errors) == [field]
