"""What the knowledge graph keeps of entries which go (``GraphOnEntries``, a
``dependents.Dependent``), and of scopes which go (``forget_graph_scope``).

When entries are deleted or redacted, in the same transaction, the evidence that quotes
them goes; an edge left with no evidence goes (counted ``graph.edges``); a node that lost
evidence, or an end of an edge that went, is deleted when it is left with no evidence and
no edge (``graph.nodes``), and is trimmed when it still stands on other evidence or edges
(``graph.trimmed``, as is an edge that keeps other evidence). A node that never had
evidence and still has edges stays: it stands on them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.db.models import Exists, OuterRef, Q

from cogitator_memory.dependents import Forgotten
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.graph.rules import GraphRules
from cogitator_memory.threads.models import Entry

__all__ = ["GraphOnEntries", "forget_graph_scope"]

# Ids per query: well under SQLite's parameter limit.
IDS_PER_QUERY = 500


def _chunks(ids: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(ids), IDS_PER_QUERY):
        yield list(ids[start : start + IDS_PER_QUERY])


def _bare_nodes(node_ids: Sequence[str]) -> list[str]:
    """Those of these nodes with no evidence and no edge."""
    bare: list[str] = []
    for chunk in _chunks(sorted(set(node_ids))):
        nodes = GraphNode.objects.filter(pk__in=chunk).filter(
            ~Exists(GraphEvidence.objects.filter(node_id=OuterRef("pk"))),
            ~Exists(
                GraphEdge.objects.filter(Q(source_id=OuterRef("pk")) | Q(target_id=OuterRef("pk")))
            ),
        )
        bare.extend(nodes.values_list("pk", flat=True))
    return bare


class GraphOnEntries:
    """Purges or trims the nodes and edges that quote entries that go."""

    name = "graph"
    models = (GraphNode, GraphEdge, GraphEvidence)

    def entries_added(self, entries: Sequence[Entry]) -> None:
        """The graph is written from entries later: nothing to derive yet."""

    def forget_entries(self, entry_ids: Sequence[str], forgotten: Forgotten) -> None:
        ids = list(entry_ids)
        quoting = GraphEvidence.objects.of_entries(ids)
        if not quoting.exists():
            return
        # A write quoting these entries waits on their threads' locks, which the deletion
        # holds (``evidence.lock_quoted_threads``). The lock of the agents' graph writes
        # keeps a merge from moving evidence and edges under the reads below.
        GraphRules.lock_agents(
            {
                *GraphNode.objects.filter(evidence__in=quoting).values_list("agent_id", flat=True),
                *GraphEdge.objects.filter(evidence__in=quoting).values_list("agent_id", flat=True),
            }
        )
        touched = list(quoting.values_list("node_id", "edge_id").distinct())
        if not touched:
            return
        node_ids = sorted({node for node, _edge in touched if node is not None})
        edge_ids = sorted({edge for _node, edge in touched if edge is not None})
        for chunk in _chunks(ids):
            GraphEvidence.objects.filter(entry_id__in=chunk).delete()

        bare_edges = list(
            GraphEdge.objects.filter(pk__in=edge_ids)
            .filter(~Exists(GraphEvidence.objects.filter(edge_id=OuterRef("pk"))))
            .values_list("pk", "source_id", "target_id")
        )
        ends = {node for _pk, source, target in bare_edges for node in (source, target)}
        gone_edges = [pk for pk, _source, _target in bare_edges]
        for chunk in _chunks(gone_edges):
            GraphEdge.objects.filter(pk__in=chunk).delete()
        forgotten["graph.edges"] += len(gone_edges)
        forgotten["graph.trimmed"] += len(edge_ids) - len(gone_edges)

        bare = _bare_nodes([*node_ids, *ends])
        for chunk in _chunks(bare):
            GraphNode.objects.filter(pk__in=chunk).delete()
        forgotten["graph.nodes"] += len(bare)
        forgotten["graph.trimmed"] += len(set(node_ids) - set(bare))

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        # Nodes and edges keep the scope they were written in, as items do.
        return None


def forget_graph_scope(
    forgotten: Forgotten,
    *,
    agent_id: str,
    user_id: str | None = None,
    thread_id: str | None = None,
) -> tuple[list[str], list[str]]:
    """Delete the nodes and edges of every scope of the user (``user_id``) or of the
    thread (``thread_id``) in the agent, with their evidence; count ``graph.nodes`` and
    ``graph.edges``. Call inside a transaction. Returns the ids of the nodes and of the
    edges deleted (for the admin log)."""
    if (user_id is None) == (thread_id is None):
        raise ValueError("Name a user or a thread.")
    owner = {"user_id": user_id} if user_id is not None else {"thread_id": thread_id}
    GraphRules.lock_agents([agent_id])
    edge_ids = list(
        GraphEdge.objects.filter(agent_id=agent_id, **owner).values_list("pk", flat=True)
    )
    node_ids = list(
        GraphNode.objects.filter(agent_id=agent_id, **owner).values_list("pk", flat=True)
    )
    for chunk in _chunks(edge_ids):
        GraphEdge.objects.filter(pk__in=chunk).delete()
    # Edges of the nodes that are in another scope cannot be (an edge joins one scope);
    # deleting the nodes cascades to any left all the same.
    for chunk in _chunks(node_ids):
        GraphNode.objects.filter(pk__in=chunk).delete()
    forgotten["graph.edges"] += len(edge_ids)
    forgotten["graph.nodes"] += len(node_ids)
    return node_ids, edge_ids
