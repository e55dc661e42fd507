"""The knowledge graph in the ``item_graph`` walk: items two relations away from what the
turn names get rank, through active nodes and edges of the run's scope only."""

from __future__ import annotations

from datetime import timedelta

import pytest

from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph import MemoryGraph
from cogitator_memory.graph.models import GraphNode
from cogitator_memory.items.models import Entity
from cogitator_memory.recall.retriever import MemoryRetriever
from tests.recall.test_retriever import ANA, ANCHOR, BEN, write

pytestmark = pytest.mark.django_db

graph = MemoryGraph()


def chain(scope: MemoryScope, *, trust: str = "system") -> dict[str, GraphNode]:
    """Lena works at Acme; Acme is located in Porto. Lena's node mirrors her entity where
    the scope sees it; the other nodes are matched to the items' subjects by name."""
    lena = Entity.objects.seen_from(scope).filter(name="Lena").first()
    nodes = {
        "lena": graph.add_node(scope, name="Lena", type="person", trust="system", entity=lena),
        "acme": graph.add_node(scope, name="ACME", type="company", trust="system"),
        "porto": graph.add_node(scope, name="porto", type="city", trust="system"),
    }
    graph.add_edge(
        scope, source=nodes["lena"], target=nodes["acme"], relation="works_at", trust=trust
    )
    graph.add_edge(
        scope, source=nodes["acme"], target=nodes["porto"], relation="located_in", trust=trust
    )
    return nodes


@pytest.fixture
def items() -> dict[str, str]:
    return {
        "lena": write(ANA, "Lena", "job", "engineer").pk,
        "porto": write(ANA, "Porto", "weather", "mostly sunny").pk,
        "other": write(ANA, "Rita", "hobby", "chess").pk,
    }


# An item the walk never reaches keeps a rounding trace of rank (about 1e-8); one it
# reaches from what the turn names, even four links away, holds far more.
REACHED = 1e-5


def graph_ranked(**options: object) -> set[str]:
    """The items the walk reached for a turn that names Lena."""
    options.setdefault("anchor", ANCHOR)
    retrieval = MemoryRetriever().retrieve(input="How is Lena doing?", **options)  # type: ignore[arg-type]
    return {
        hit.id
        for hit in retrieval.hits
        if "item_graph" in hit.channels and hit.channels["item_graph"].score > REACHED
    }


def test_items_two_relations_from_what_the_turn_names_get_rank(items: dict[str, str]) -> None:
    # without the graph, the walk reaches Lena's items alone
    assert graph_ranked(scope=ANA) == {items["lena"]}
    # given the chain Lena -> Acme -> Porto
    chain(ANA)
    # then the item about Porto is reached too, and Rita's is not
    assert graph_ranked(scope=ANA) == {items["lena"], items["porto"]}


def test_a_node_the_turn_names_seeds_the_walk(items: dict[str, str]) -> None:
    # given a node no item is about, which the turn names, related to Porto
    chain(ANA)
    harbour = graph.add_node(ANA, name="Ribeira", type="place", trust="system")
    porto = GraphNode.objects.get(name="porto")
    graph.add_edge(ANA, source=harbour, target=porto, relation="part_of", trust="system")
    # when
    retrieval = MemoryRetriever().retrieve(input="Anything on Ribeira?", anchor=ANCHOR, scope=ANA)
    # then
    walked = {
        hit.id: hit.channels["item_graph"].score
        for hit in retrieval.hits
        if "item_graph" in hit.channels
    }
    assert max(walked, key=walked.__getitem__) == items["porto"]


def test_suggested_edges_other_scopes_and_ended_nodes_do_not_count(items: dict[str, str]) -> None:
    # a suggested chain
    chain(ANA, trust="model")
    assert graph_ranked(scope=ANA) == {items["lena"]}
    # another user's chain
    chain(BEN)
    assert graph_ranked(scope=ANA) == {items["lena"]}
    # an active chain through a node that no longer holds
    nodes = chain(MemoryScope("concierge"))
    graph.update_node(nodes["acme"].pk, valid_to=ANCHOR - timedelta(days=1))
    assert graph_ranked(scope=ANA) == {items["lena"]}
    # and as it was two days before, the agent-wide chain held
    assert items["porto"] in graph_ranked(scope=ANA, anchor=ANCHOR - timedelta(days=2))


def test_grants_bound_the_graph_read(items: dict[str, str]) -> None:
    chain(ANA)
    assert items["porto"] in graph_ranked(scope=ANA, grants=Grants.for_agents(["concierge"]))
    assert graph_ranked(scope=ANA, grants=Grants.for_agents(["sales"])) == set()
