"""Nodes of what activated memory items are about: the activation step the graph
registers (``items.activation``), so a subject becomes a node in the transaction that
activates its items, by the rule of ``MemoryGraph.sync_subjects`` for those items only."""

from __future__ import annotations

from collections.abc import Sequence

from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.evidence import CheckedQuote
from cogitator_memory.graph.inputs import normal_words
from cogitator_memory.graph.models import GraphNode
from cogitator_memory.graph.writing import DEFAULT_TYPE, GraphWriting
from cogitator_memory.items.models import TRUST_RANK, Entity, Evidence, ItemStatus, MemoryItem
from cogitator_memory.items.statements import NewEvidence

__all__ = ["nodes_of_activated_items"]


def nodes_of_activated_items(item_ids: Sequence[str]) -> list[GraphNode]:
    """A node of each activated item's exact scope for its subject: named, aliased and
    typed as the entity, linked to it, standing on the items' evidence, of their best
    trust, active (a node a reviewer rejected stays rejected). Returns the nodes."""
    items = list(
        MemoryItem.objects.filter(pk__in=list(item_ids), status=ItemStatus.ACTIVE).order_by("pk")
    )
    if not items:
        return []
    graph = GraphWriting()
    graph.lock_agents(item.agent_id for item in items)
    quotes: dict[str, list[CheckedQuote]] = {}
    rows = Evidence.objects.filter(item__in=[item.pk for item in items]).order_by("pk")
    for item_id, entry_id, quote, tool_call_id, file_range, verified in rows.values_list(
        "item_id", "entry_id", "quote", "tool_call_id", "file_range", "verified"
    ):
        new = NewEvidence(quote, entry_id, tool_call_id, file_range)
        quotes.setdefault(item_id, []).append(CheckedQuote(new, entry_id, verified))
    entities = Entity.objects.in_bulk({item.subject_id for item in items})
    groups: dict[tuple[MemoryScope, str], list[MemoryItem]] = {}
    for item in items:
        groups.setdefault((MemoryScope.of(item), item.subject_id), []).append(item)
    nodes: list[GraphNode] = []
    for (scope, subject_id), about in groups.items():
        entity = entities[subject_id]
        trust = max((item.trust for item in about), key=lambda said: TRUST_RANK[said])
        nodes.append(
            graph._upsert_node(
                scope,
                name=entity.name,
                type=normal_words(entity.kind or "") or DEFAULT_TYPE,
                aliases=[alias for alias in entity.aliases or [] if isinstance(alias, str)],
                properties={},
                checked=[quote for item in about for quote in quotes.get(item.pk, [])],
                trust=trust,
                active=True,
                valid_from=None,
                valid_to=None,
                entity=entity,
            )
        )
    return nodes
