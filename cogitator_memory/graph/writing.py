"""The write rules of the graph (``GraphWriting``): nodes and edges are upserted.

- A node is one per exact scope, type and key (its name folded): writing a name the
  scope has (in that type) merges into that node: its aliases, properties (the new
  values win) and evidence grow, its trust becomes the better of the two.
- An edge joins two nodes of one exact scope, one per source, target and relation;
  writing it again merges the same way (and sets its weight).
- A node or an edge is active on its own only when the system said it, or the user with
  quotes that all hold (``evidence.active_on_its_own``); else it is suggested, for a
  reviewer. Writing again can make a suggested row active by that rule; a rejected row
  stays rejected until a reviewer decides otherwise.
- Changes (``update_node``, ``update_edge``) never change a status: reviews do.
- One agent's graph writes go one after another (``GraphRules.lock_agents``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from cogitator_memory import policy
from cogitator_memory.exceptions import (
    GraphEdgeTaken,
    GraphNameTaken,
    GraphScopeMismatch,
    InvalidGraphInput,
)
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph.evidence import (
    CheckedQuote,
    active_on_its_own,
    check_quotes,
    lock_quoted_threads,
    write_evidence,
)
from cogitator_memory.graph.inputs import Errors, node_key, normal_words
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode, GraphStatus
from cogitator_memory.graph.rules import GraphRules, scope_key_of
from cogitator_memory.items.models import TRUST_RANK, Entity, Evidence, ItemStatus, MemoryItem
from cogitator_memory.items.statements import NewEvidence

__all__ = ["GraphWriting", "merged_aliases"]

DEFAULT_TYPE = "entity"
NODE_CHANGES = frozenset(
    {"name", "type", "aliases", "properties", "valid_from", "valid_to", "entity", "evidence"}
)
# What ``add_nodes`` takes of each node (``add_node``'s keyword arguments).
NODE_FIELDS = frozenset(
    {"name", "type", "aliases", "properties", "evidence", "trust", "valid_from", "valid_to"}
    | {"entity"}
)
# Nodes one ``add_nodes`` writes: one transaction holds the agent's graph lock for them all.
MAX_NODES_PER_WRITE = 1000
EDGE_CHANGES = frozenset({"relation", "properties", "weight", "valid_from", "valid_to", "evidence"})


def merged_aliases(name: str, *lists: Iterable[str]) -> list[str]:
    """The aliases of a node named ``name``: every name of ``lists`` once (by key), in
    order, none of them the name itself."""
    seen = {node_key(name)}
    aliases: list[str] = []
    for names in lists:
        for alias in names:
            key = node_key(alias)
            if key and key not in seen:
                seen.add(key)
                aliases.append(alias)
    return aliases


def better_trust(first: str, second: str) -> str:
    return max(first, second, key=lambda trust: TRUST_RANK[trust])


@dataclass(frozen=True)
class _CleanNode:
    """A node to write, its fields checked."""

    name: str
    type: str
    aliases: list[str]
    properties: dict[str, Any]
    quotes: list[NewEvidence]
    trust: str
    valid_from: datetime | None
    valid_to: datetime | None
    entity: Entity | None


def _require_scope(scope: Any) -> MemoryScope:
    if not isinstance(scope, MemoryScope):
        raise InvalidGraphInput({"scope": "A scope is a MemoryScope."})
    return scope


class GraphWriting(GraphRules):
    """Upserts of nodes and edges, their changes, and nodes of items' subjects."""

    # --- nodes ------------------------------------------------------------------------

    def _entity(self, scope: MemoryScope, entity: Any, errors: Errors) -> Entity | None:
        """The entity a node mirrors: one the scope sees."""
        if entity is None:
            return None
        entity_id = entity.pk if isinstance(entity, Entity) else entity
        found = (
            Entity.objects.seen_from(scope).filter(pk=entity_id).first()
            if isinstance(entity_id, str) and len(entity_id) <= 64
            else None
        )
        if found is None:
            errors.add("entity", f"No entity {entity_id!r} is seen from this scope.")
        return found

    def add_node(
        self,
        scope: MemoryScope,
        *,
        name: str,
        type: str = DEFAULT_TYPE,
        aliases: Iterable[str] = (),
        properties: dict[str, Any] | None = None,
        evidence: Iterable[Any] = (),
        trust: str = "model",
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        entity: Entity | str | None = None,
        grants: Grants | None = None,
    ) -> GraphNode:
        """Write a node into ``scope``: a new one, or a merge into the node of the same
        type and name (``GraphWriting``). Raises ``InvalidGraphInput`` and, with
        ``grants``, ``NoGrant`` for a scope the caller's grants do not reach. Returns the
        node as it now stands."""
        scope = _require_scope(scope)
        errors = Errors()
        node = self._clean_node(
            scope,
            errors,
            name=name,
            type=type,
            aliases=aliases,
            properties=properties,
            evidence=evidence,
            trust=trust,
            valid_from=valid_from,
            valid_to=valid_to,
            entity=entity,
        )
        errors.raise_any()
        [written] = self._write_nodes(scope, [node], grants)
        return written

    def add_nodes(
        self,
        scope: MemoryScope,
        nodes: Sequence[Mapping[str, Any]],
        *,
        grants: Grants | None = None,
    ) -> list[GraphNode]:
        """Write several nodes into ``scope`` in one transaction, each as ``add_node``
        writes one (its keyword arguments as a mapping), in order: every node is checked
        before any is written, and one failure writes none. The way to write many nodes
        (an extraction's window, an import): one commit instead of one per node. Raises
        ``InvalidGraphInput`` with the fields as ``nodes.<index>.<field>``, and ``NoGrant``.
        Returns the nodes as they now stand (a name given twice is one node, twice)."""
        scope = _require_scope(scope)
        if isinstance(nodes, str | bytes | Mapping) or not isinstance(nodes, Sequence):
            raise InvalidGraphInput({"nodes": ["Nodes are a list of mappings."]})
        if len(nodes) > MAX_NODES_PER_WRITE:
            raise InvalidGraphInput({"nodes": [f"At most {MAX_NODES_PER_WRITE} nodes a write."]})
        cleaned: list[_CleanNode] = []
        problems: dict[str, list[str]] = {}
        for index, given in enumerate(nodes):
            unknown = sorted(set(given) - NODE_FIELDS) if isinstance(given, Mapping) else []
            if not isinstance(given, Mapping) or unknown or "name" not in given:
                problems[f"nodes.{index}"] = [
                    f"A node is a mapping with a name and of {', '.join(sorted(NODE_FIELDS))}."
                ]
                continue
            errors = Errors()
            cleaned.append(self._clean_node(scope, errors, **given))
            for field, messages in errors.errors.items():
                problems[f"nodes.{index}.{field}"] = messages
        if problems:
            raise InvalidGraphInput(problems)
        return self._write_nodes(scope, cleaned, grants)

    def _clean_node(
        self,
        scope: MemoryScope,
        errors: Errors,
        *,
        name: Any,
        type: Any = DEFAULT_TYPE,
        aliases: Any = (),
        properties: Any = None,
        evidence: Any = (),
        trust: Any = "model",
        valid_from: Any = None,
        valid_to: Any = None,
        entity: Any = None,
    ) -> _CleanNode:
        start, end = errors.valid_time(valid_from, valid_to)
        return _CleanNode(
            name=errors.name(name),
            type=errors.type(type),
            aliases=errors.aliases(aliases),
            properties=errors.properties(properties),
            quotes=errors.evidence(evidence),
            trust=errors.trust(trust),
            valid_from=start,
            valid_to=end,
            entity=self._entity(scope, entity, errors),
        )

    def _write_nodes(
        self, scope: MemoryScope, nodes: Sequence[_CleanNode], grants: Grants | None
    ) -> list[GraphNode]:
        """Checked nodes upserted in one transaction: the quoted threads, then the
        agent's graph, locked once; every quote checked in one query."""
        policy.require_write(grants, scope.agent_id, scope.user_id, user_field="scope.user_id")
        quotes = [quote for node in nodes for quote in node.quotes]
        with transaction.atomic():
            lock_quoted_threads(quotes)
            self.lock_agents([scope.agent_id])
            checked = iter(check_quotes(scope, quotes, grants))
            written: list[GraphNode] = []
            for node in nodes:
                own = [next(checked) for _quote in node.quotes]
                written.append(
                    self._upsert_node(
                        scope,
                        name=node.name,
                        type=node.type,
                        aliases=node.aliases,
                        properties=node.properties,
                        checked=own,
                        trust=node.trust,
                        active=active_on_its_own(node.trust, own),
                        valid_from=node.valid_from,
                        valid_to=node.valid_to,
                        entity=node.entity,
                    )
                )
            return written

    def _upsert_node(
        self,
        scope: MemoryScope,
        *,
        name: str,
        type: str,
        aliases: Sequence[str],
        properties: dict[str, Any],
        checked: Sequence[CheckedQuote],
        trust: str,
        active: bool,
        valid_from: datetime | None,
        valid_to: datetime | None,
        entity: Entity | None,
    ) -> GraphNode:
        """The node of the scope, type and name, made or merged into (under the lock)."""
        key = node_key(name)
        digest = scope_key_of(scope)
        now = self.clock()
        node = (
            GraphNode.objects.select_for_update()
            .filter(scope_key=digest, type=type, key=key)
            .first()
        )
        new = node is None
        if node is None:
            node = GraphNode.objects.create(
                **scope.as_fields(),
                scope_key=digest,
                type=type,
                name=name,
                key=key,
                aliases=merged_aliases(name, aliases),
                properties=properties,
                trust=trust,
                status=GraphStatus.ACTIVE if active else GraphStatus.SUGGESTED,
                valid_from=valid_from,
                valid_to=valid_to,
                entity=entity,
                created_at=now,
                updated_at=now,
            )
        else:
            node.aliases = merged_aliases(node.name, node.aliases or [], [name], aliases)
            node.properties = {**(node.properties or {}), **properties}
            node.trust = better_trust(node.trust, trust)
            if active and node.status == GraphStatus.SUGGESTED:
                node.status = GraphStatus.ACTIVE
            node.valid_from = valid_from if valid_from is not None else node.valid_from
            node.valid_to = valid_to if valid_to is not None else node.valid_to
            node.entity = entity if entity is not None else node.entity
            node.updated_at = now
            node.save()
        write_evidence(checked, node=node, new=new)
        return node

    @transaction.atomic
    def update_node(
        self, node_id: str, *, grants: Grants | None = None, **changes: Any
    ) -> GraphNode:
        """Change a node: its ``name``, ``type``, ``aliases``, ``properties``,
        ``valid_from``, ``valid_to``, ``entity``, or its ``evidence`` (the quotes given
        replace its quotes). A status changes by a review only. Raises
        ``GraphNodeNotFound``, ``InvalidGraphInput``, ``NoGrant``, and ``GraphNameTaken``
        when another node of the scope and type has the new name. Returns the node."""
        errors = Errors()
        for unknown in sorted(set(changes) - NODE_CHANGES):
            errors.add(unknown, "Not a field of a node that can be changed.")
        errors.raise_any()
        node = self._node(node_id, grants)
        scope = MemoryScope.of(node)
        policy.require_write(grants, scope.agent_id, scope.user_id, user_field="scope.user_id")
        values: dict[str, Any] = {}
        if "name" in changes:
            values["name"] = errors.name(changes["name"])
        if "type" in changes:
            values["type"] = errors.type(changes["type"])
        if "aliases" in changes:
            values["aliases"] = errors.aliases(changes["aliases"])
        if "properties" in changes:
            values["properties"] = errors.properties(changes["properties"])
        start, end = errors.valid_time(
            changes.get("valid_from", node.valid_from), changes.get("valid_to", node.valid_to)
        )
        quotes = errors.evidence(changes["evidence"]) if "evidence" in changes else None
        entity = self._entity(scope, changes["entity"], errors) if changes.get("entity") else None
        errors.raise_any()
        lock_quoted_threads(quotes or [])
        self.lock_agents([node.agent_id])
        node = self._node(node.pk, grants, lock=True)
        if "name" in values or "type" in values:
            name = values.get("name", node.name)
            kind = values.get("type", node.type)
            holder = (
                GraphNode.objects.filter(scope_key=node.scope_key, type=kind, key=node_key(name))
                .exclude(pk=node.pk)
                .first()
            )
            if holder is not None:
                raise GraphNameTaken(holder.pk, name)
            node.name, node.type, node.key = name, kind, node_key(name)
        node.aliases = merged_aliases(node.name, values.get("aliases", node.aliases or []))
        if "properties" in values:
            node.properties = values["properties"]
        node.valid_from, node.valid_to = start, end
        if "entity" in changes:
            node.entity = entity
        node.updated_at = self.clock()
        node.save()
        if quotes is not None:
            GraphEvidence.objects.filter(node=node).delete()
            write_evidence(check_quotes(scope, quotes, grants), node=node)
        return node

    # --- edges ------------------------------------------------------------------------

    def add_edge(
        self,
        scope: MemoryScope,
        *,
        source: GraphNode | str,
        target: GraphNode | str,
        relation: str,
        properties: dict[str, Any] | None = None,
        weight: float = 1.0,
        evidence: Iterable[Any] = (),
        trust: str = "model",
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        grants: Grants | None = None,
    ) -> GraphEdge:
        """Write an edge ``source`` ``relation`` ``target`` between two nodes of
        ``scope``: a new one, or a merge into the edge they have of that relation. Raises
        ``InvalidGraphInput``, ``GraphNodeNotFound`` (a node the caller cannot see),
        ``GraphScopeMismatch`` (a node of another scope), and ``NoGrant``. Returns the
        edge as it now stands."""
        scope = _require_scope(scope)
        errors = Errors()
        clean_relation = errors.relation(relation)
        clean_properties = errors.properties(properties)
        clean_weight = errors.weight(weight)
        quotes = errors.evidence(evidence)
        clean_trust = errors.trust(trust)
        start, end = errors.valid_time(valid_from, valid_to)
        errors.raise_any()
        policy.require_write(grants, scope.agent_id, scope.user_id, user_field="scope.user_id")
        with transaction.atomic():
            lock_quoted_threads(quotes)
            self.lock_agents([scope.agent_id])
            first = self._node(source, grants)
            second = self._node(target, grants)
            digest = scope_key_of(scope)
            if first.scope_key != digest or second.scope_key != digest:
                raise GraphScopeMismatch("target", [first.pk, second.pk])
            if first.pk == second.pk:
                raise InvalidGraphInput({"target": "An edge joins two different nodes."})
            checked = check_quotes(scope, quotes, grants)
            now = self.clock()
            edge = (
                GraphEdge.objects.select_for_update()
                .filter(source=first, target=second, relation=clean_relation)
                .first()
            )
            active = active_on_its_own(clean_trust, checked)
            new = edge is None
            if edge is None:
                edge = GraphEdge.objects.create(
                    **scope.as_fields(),
                    scope_key=digest,
                    source=first,
                    target=second,
                    relation=clean_relation,
                    properties=clean_properties,
                    weight=clean_weight,
                    trust=clean_trust,
                    status=GraphStatus.ACTIVE if active else GraphStatus.SUGGESTED,
                    valid_from=start,
                    valid_to=end,
                    created_at=now,
                    updated_at=now,
                )
            else:
                edge.properties = {**(edge.properties or {}), **clean_properties}
                edge.weight = clean_weight
                edge.trust = better_trust(edge.trust, clean_trust)
                if active and edge.status == GraphStatus.SUGGESTED:
                    edge.status = GraphStatus.ACTIVE
                edge.valid_from = start if start is not None else edge.valid_from
                edge.valid_to = end if end is not None else edge.valid_to
                edge.updated_at = now
                edge.save()
            write_evidence(checked, edge=edge, new=new)
            return edge

    @transaction.atomic
    def update_edge(
        self, edge_id: str, *, grants: Grants | None = None, **changes: Any
    ) -> GraphEdge:
        """Change an edge: its ``relation``, ``properties``, ``weight``, ``valid_from``,
        ``valid_to``, or its ``evidence`` (the quotes given replace its quotes). A status
        changes by a review only. Raises ``GraphEdgeNotFound``, ``InvalidGraphInput``,
        ``NoGrant``, and ``GraphEdgeTaken`` when the nodes have another edge of the new
        relation. Returns the edge."""
        errors = Errors()
        for unknown in sorted(set(changes) - EDGE_CHANGES):
            errors.add(unknown, "Not a field of an edge that can be changed.")
        errors.raise_any()
        edge = self._edge(edge_id, grants)
        scope = MemoryScope.of(edge)
        policy.require_write(grants, scope.agent_id, scope.user_id, user_field="scope.user_id")
        relation = errors.relation(changes["relation"]) if "relation" in changes else None
        properties = errors.properties(changes["properties"]) if "properties" in changes else None
        weight = errors.weight(changes["weight"]) if "weight" in changes else None
        start, end = errors.valid_time(
            changes.get("valid_from", edge.valid_from), changes.get("valid_to", edge.valid_to)
        )
        quotes = errors.evidence(changes["evidence"]) if "evidence" in changes else None
        errors.raise_any()
        lock_quoted_threads(quotes or [])
        self.lock_agents([edge.agent_id])
        edge = self._edge(edge.pk, grants, lock=True)
        if relation is not None and relation != edge.relation:
            holder = GraphEdge.objects.filter(
                source_id=edge.source_id, target_id=edge.target_id, relation=relation
            ).first()
            if holder is not None:
                raise GraphEdgeTaken(holder.pk)
            edge.relation = relation
        if properties is not None:
            edge.properties = properties
        if weight is not None:
            edge.weight = weight
        edge.valid_from, edge.valid_to = start, end
        edge.updated_at = self.clock()
        edge.save()
        if quotes is not None:
            GraphEvidence.objects.filter(edge=edge).delete()
            write_evidence(check_quotes(scope, quotes, grants), edge=edge)
        return edge

    # --- the subjects of items ---------------------------------------------------------

    @transaction.atomic
    def sync_subjects(self, scope: MemoryScope, *, grants: Grants | None = None) -> list[GraphNode]:
        """A node of the scope for every entity an active item of exactly ``scope`` is
        about: typed by the entity's kind (``entity`` when it has none), named and
        aliased as the entity, linked to it, standing on the evidence of those items
        (copied, verified as it was), with the best trust of the items. The nodes are
        active, as the items are, except those a reviewer rejected. Writing again adds
        only what is new. Raises ``NoGrant``. Returns the nodes, by name."""
        scope = _require_scope(scope)
        policy.require_write(grants, scope.agent_id, scope.user_id, user_field="scope.user_id")
        self.lock_agents([scope.agent_id])
        items = MemoryItem.objects.of_exact_scope(scope).filter(status=ItemStatus.ACTIVE)
        if grants is not None:
            items = items.visible_to(grants)
        by_subject: dict[str, list[tuple[str, str]]] = {}
        for item_id, subject_id, trust in items.values_list("pk", "subject_id", "trust"):
            by_subject.setdefault(subject_id, []).append((item_id, trust))
        if not by_subject:
            return []
        quotes: dict[str, list[CheckedQuote]] = {}
        rows = Evidence.objects.filter(item__in=items).order_by("pk")
        for row in rows.values_list(
            "item__subject_id", "entry_id", "quote", "tool_call_id", "file_range", "verified"
        ):
            subject_id, entry_id, quote, tool_call_id, file_range, verified = row
            new = NewEvidence(quote, entry_id, tool_call_id, file_range)
            quotes.setdefault(subject_id, []).append(CheckedQuote(new, entry_id, verified))
        nodes: list[GraphNode] = []
        for entity in Entity.objects.filter(pk__in=list(by_subject)).order_by("name", "pk"):
            trust = max(
                (trust for _id, trust in by_subject[entity.pk]), key=lambda said: TRUST_RANK[said]
            )
            aliases = [alias for alias in entity.aliases or [] if isinstance(alias, str)]
            nodes.append(
                self._upsert_node(
                    scope,
                    name=entity.name,
                    type=normal_words(entity.kind) or DEFAULT_TYPE,
                    aliases=aliases,
                    properties={},
                    checked=quotes.get(entity.pk, []),
                    trust=trust,
                    active=True,
                    valid_from=None,
                    valid_to=None,
                    entity=entity,
                )
            )
        return nodes
