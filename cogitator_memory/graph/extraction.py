"""Relations extraction found, written into the graph (``write_extracted_relations``, the
``write_relations`` seam of ``items.window_extractor``).

Each relation becomes an edge between the nodes of its source and target in the scope: a
node of that name the scope has already (of any type; one that mirrors an entity first),
else a new node, linked to the entity of that name when the scope sees one. Nodes and
edges are written with the model's trust, so they wait for a reviewer (suggested), and
stand on the relation's quote (verified when its words hold in the entry). A relation the
graph's rules refuse (a name too long for a node) is left out before anything of it is
written; the others are written.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db.models import F

from cogitator_memory.grants import MemoryScope
from cogitator_memory.graph.inputs import Errors, node_key
from cogitator_memory.graph.models import GraphNode
from cogitator_memory.graph.rules import scope_key_of
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.items.models import Entity, Trust
from cogitator_memory.items.window_extractor import NewRelation

__all__ = ["write_extracted_relations"]

logger = logging.getLogger(__name__)


def _node(graph: MemoryGraph, scope: MemoryScope, name: str, relation: NewRelation) -> GraphNode:
    """The scope's node of this name, or a new suggested one standing on the quote."""
    key = node_key(name)
    found = (
        GraphNode.objects.filter(scope_key=scope_key_of(scope), key=key)
        .order_by(F("entity_id").asc(nulls_last=True), "pk")
        .first()
    )
    if found is not None:
        return found
    entity = Entity.objects.seen_from(scope).filter(key=key).order_by("pk").first()
    return graph.add_node(
        scope, name=name, trust=Trust.MODEL, evidence=relation.evidence, entity=entity
    )


def write_extracted_relations(scope: MemoryScope, relations: Sequence[NewRelation]) -> int:
    """Write each relation as a suggested edge of ``scope`` (``graph.extraction``), in the
    open transaction. Returns how many were written."""
    graph = MemoryGraph()
    written = 0
    for relation in relations:
        # Checked before anything is written, so a refused relation leaves no node behind.
        errors = Errors()
        errors.name(relation.source, "source")
        errors.name(relation.target, "target")
        errors.relation(relation.relation)
        errors.evidence(relation.evidence)
        if errors.errors:
            logger.info("A relation extraction found was left out: %s", errors.errors)
            continue
        source = _node(graph, scope, relation.source, relation)
        target = _node(graph, scope, relation.target, relation)
        if source.pk == target.pk:
            continue
        graph.add_edge(
            scope,
            source=source,
            target=target,
            relation=relation.relation,
            trust=Trust.MODEL,
            evidence=relation.evidence,
        )
        written += 1
    return written
