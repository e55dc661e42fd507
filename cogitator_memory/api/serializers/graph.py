"""The knowledge graph as the API reads and writes it: nodes, edges, the quotes they stand
on, a neighbourhood, a shortest path, and the filters of their lists.

Every rule a request can break is in the schema (lengths, patterns, bounds), except those
between fields or about what exists (``valid_to`` after ``valid_from``, a node or entity
that must be seen, nodes of one scope): those the services check and the API answers with
400 and the field named."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers import enums
from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    SPACE_CHARACTERS,
    JSONObjectField,
    PageLimitField,
    QueryIntegerField,
    StrictCharField,
    StrictDateTimeField,
    StrictFloatField,
)
from cogitator_memory.api.serializers.files import scope_id_field
from cogitator_memory.graph.inputs import MAX_ALIASES, MAX_DEPTH, MAX_NODES, MAX_QUOTE
from cogitator_memory.graph.models import (
    MAX_NAME,
    MAX_RELATION,
    MAX_TYPE,
    GraphEdge,
    GraphEvidence,
    GraphNode,
    GraphStatus,
)
from cogitator_memory.graph.review import RejectGraphNodes
from cogitator_memory.items.models import Trust

# Node and edge ids are a prefix and 32 hex digits; any longer one names none.
GRAPH_ID_MAX_LENGTH = 64
# A page of a list ends at the id of its last row, which the next page starts after.
GRAPH_CURSOR_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,64}\Z")
_STATUS_NAMES = "|".join(choice.value for choice in GraphStatus)
GRAPH_STATUSES_PATTERN = rf"^({_STATUS_NAMES})(,({_STATUS_NAMES}))*\Z"
# Relations in a query, separated by commas: each a word of at most MAX_RELATION
# characters, no spaces (they read as ``_`` in a relation's one form).
_RELATION_WORD = rf"[^,\x00{SPACE_CHARACTERS}]{{1,{MAX_RELATION}}}"
RELATIONS_PATTERN = rf"^{_RELATION_WORD}(,{_RELATION_WORD})*\Z"

_DATETIME = serializers.DateTimeField()


def _moment(value: Any) -> Any:
    return None if value is None else _DATETIME.to_representation(value)


def _text(max_length: int, help_text: str, **kwargs: Any) -> StrictCharField:
    return StrictCharField(
        max_length=max_length,
        pattern=NOT_BLANK_PATTERN,
        pattern_message=f"A text of 1 to {max_length} characters, not only spaces.",
        help_text=help_text,
        **kwargs,
    )


def graph_id_field(help_text: str, **kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=GRAPH_ID_MAX_LENGTH, help_text=help_text, **kwargs)


def statuses_field(help_text: str) -> StrictCharField:
    return StrictCharField(
        required=False,
        pattern=GRAPH_STATUSES_PATTERN,
        pattern_message="Statuses separated by commas (no spaces): "
        f"{', '.join(GraphStatus.values)}.",
        help_text=help_text,
    )


def relations_field() -> StrictCharField:
    return StrictCharField(
        required=False,
        pattern=RELATIONS_PATTERN,
        pattern_message=f"Relations separated by commas, each of 1 to {MAX_RELATION} "
        "characters without spaces.",
        help_text="Follow only edges of these relations, separated by commas "
        "(`works_at,lives_in`). Default: every relation.",
    )


def cursor_field(made_by: str) -> StrictCharField:
    return StrictCharField(
        required=False,
        pattern=GRAPH_CURSOR_PATTERN.pattern,
        pattern_message=f"This cursor was not made by the {made_by} list.",
        help_text=f"next_cursor of the previous page: the id of the last {made_by} seen.",
    )


# --- what the API answers ---------------------------------------------------------------


class GraphEvidenceSerializer(serializers.Serializer):
    """A quote a node or an edge stands on. ``entry_id`` and ``thread_id`` are absent when
    the entry is gone or in a thread you may not see; the quote stays."""

    id = serializers.IntegerField()
    quote = serializers.CharField(allow_blank=True)
    verified = serializers.BooleanField(help_text="Whether the quote holds in its entry.")
    entry_id = serializers.CharField(required=False)
    thread_id = serializers.CharField(required=False)
    tool_call_id = serializers.CharField(required=False)
    file_range = serializers.DictField(required=False)
    created_at = serializers.DateTimeField()

    def to_representation(self, instance: GraphEvidence) -> dict[str, Any]:
        visible_threads: set[str] = self.context.get("visible_threads", set())
        data: dict[str, Any] = {
            "id": instance.pk,
            "quote": instance.quote,
            "verified": instance.verified,
            "created_at": _moment(instance.created_at),
        }
        entry = instance.entry
        if entry is not None and entry.thread_id in visible_threads:
            data["entry_id"] = entry.pk
            data["thread_id"] = entry.thread_id
        if instance.tool_call_id is not None:
            data["tool_call_id"] = instance.tool_call_id
        if isinstance(instance.file_range, dict):
            data["file_range"] = instance.file_range
        return data


class GraphRowSerializer(serializers.Serializer):
    """What nodes and edges share: their exact scope, who said them, whether they count,
    the time they held."""

    id = serializers.CharField()
    agent_id = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)
    project_id = serializers.CharField(allow_null=True)
    thread_id = serializers.CharField(allow_null=True)
    properties = serializers.DictField()
    trust = enums.named_enum(enums.TRUST, choices=Trust.choices)
    status = enums.named_enum(enums.GRAPH_STATUS, choices=GraphStatus.choices)
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def row(self, instance: GraphNode | GraphEdge) -> dict[str, Any]:
        return {
            "id": instance.pk,
            "agent_id": instance.agent_id,
            "user_id": instance.user_id,
            "project_id": instance.project_id,
            "thread_id": instance.thread_id,
            "properties": instance.properties or {},
            "trust": instance.trust,
            "status": instance.status,
            "valid_from": _moment(instance.valid_from),
            "valid_to": _moment(instance.valid_to),
            "created_at": _moment(instance.created_at),
            "updated_at": _moment(instance.updated_at),
        }


class GraphNodeSerializer(GraphRowSerializer):
    """A node: a person, a place, a thing or an idea memory knows of."""

    type = serializers.CharField(help_text="What kind of thing it is, in its one form.")
    name = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())
    entity_id = serializers.CharField(
        allow_null=True, help_text="The subject of memory items it stands for, if any."
    )

    def to_representation(self, instance: GraphNode) -> dict[str, Any]:
        return {
            **self.row(instance),
            "type": instance.type,
            "name": instance.name,
            "aliases": list(instance.aliases or []),
            "entity_id": instance.entity_id,
        }


class GraphEdgeSerializer(GraphRowSerializer):
    """An edge: ``source`` ``relation`` ``target``, two nodes of one scope."""

    source_id = serializers.CharField()
    target_id = serializers.CharField()
    relation = serializers.CharField(help_text="In its one form: lower case words joined by _.")
    weight = serializers.FloatField(min_value=0)

    def to_representation(self, instance: GraphEdge) -> dict[str, Any]:
        return {
            **self.row(instance),
            "source_id": instance.source_id,
            "target_id": instance.target_id,
            "relation": instance.relation,
            "weight": instance.weight,
        }


def _evidence(instance: GraphNode | GraphEdge, context: Mapping[str, Any]) -> Any:
    rows = instance.evidence.select_related("entry").order_by("id")
    return GraphEvidenceSerializer(rows, many=True, context=context).data


class GraphNodeDetailSerializer(GraphNodeSerializer):
    evidence = GraphEvidenceSerializer(many=True, help_text="The quotes it stands on.")

    def to_representation(self, instance: GraphNode) -> dict[str, Any]:
        return {
            **super().to_representation(instance),
            "evidence": _evidence(instance, self.context),
        }


class GraphEdgeDetailSerializer(GraphEdgeSerializer):
    evidence = GraphEvidenceSerializer(many=True, help_text="The quotes it stands on.")

    def to_representation(self, instance: GraphEdge) -> dict[str, Any]:
        return {
            **super().to_representation(instance),
            "evidence": _evidence(instance, self.context),
        }


class GraphNodePageSerializer(serializers.Serializer):
    results = GraphNodeSerializer(many=True)
    next_cursor = StrictCharField(
        allow_null=True, pattern=GRAPH_CURSOR_PATTERN.pattern, help_text="Pass as cursor."
    )
    next = serializers.URLField(allow_null=True, help_text="The URL of the next page.")


class GraphEdgePageSerializer(serializers.Serializer):
    results = GraphEdgeSerializer(many=True)
    next_cursor = StrictCharField(
        allow_null=True, pattern=GRAPH_CURSOR_PATTERN.pattern, help_text="Pass as cursor."
    )
    next = serializers.URLField(allow_null=True, help_text="The URL of the next page.")


class NeighbourSerializer(GraphNodeSerializer):
    depth = serializers.IntegerField(min_value=0, help_text="Edges from the node asked about.")


class NeighbourhoodSerializer(serializers.Serializer):
    nodes = NeighbourSerializer(many=True, help_text="Nearest first, the node asked about first.")
    edges = GraphEdgeSerializer(many=True, help_text="The edges among them the walk may follow.")


class GraphPathSerializer(serializers.Serializer):
    found = serializers.BooleanField(help_text="Whether a path within max_depth was found.")
    length = serializers.IntegerField(
        min_value=0, allow_null=True, help_text="Its edges; null when none was found."
    )
    nodes = GraphNodeSerializer(many=True, help_text="From the source to the target.")
    edges = GraphEdgeSerializer(many=True, help_text="Between them, in order.")


# --- what the API takes ----------------------------------------------------------------


class GraphEvidenceInputSerializer(serializers.Serializer):
    quote = _text(MAX_QUOTE, "The words, as they stand in the entry.")
    entry_id = StrictCharField(
        max_length=MAX_NAME, required=False, help_text="The entry the quote is in."
    )
    tool_call_id = StrictCharField(
        max_length=MAX_NAME, required=False, help_text="The tool call it came from."
    )
    file_range = JSONObjectField(required=False, help_text="Where in a file, if it is one.")


def evidence_field() -> GraphEvidenceInputSerializer:
    return GraphEvidenceInputSerializer(
        many=True,
        required=False,
        help_text="The quotes it stands on; a quote that holds in its entry counts for more.",
    )


def aliases_field() -> serializers.ListField:
    return serializers.ListField(
        child=_text(MAX_NAME, "Another name."),
        max_length=MAX_ALIASES,
        required=False,
        help_text="Other names of the same thing.",
    )


def moment_field(help_text: str) -> StrictDateTimeField:
    return StrictDateTimeField(required=False, allow_null=True, help_text=help_text)


NAME_HELP = "The name; one per scope and type (case and spacing aside)."
RELATION_HELP = "How the source relates to the target (works at, ...)."
VALID_FROM_HELP = "When it began to hold, if known."
VALID_TO_HELP = "When it stopped holding (after valid_from); null while it holds."


class GraphNodeChangeSerializer(serializers.Serializer):
    """A node's fields that a person or a program may set; a status changes by review."""

    type = _text(MAX_TYPE, "What kind of thing it is (person, place, ...).", required=False)
    aliases = aliases_field()
    properties = JSONObjectField(required=False, help_text="Anything else known of it.")
    evidence = evidence_field()
    valid_from = moment_field(VALID_FROM_HELP)
    valid_to = moment_field(VALID_TO_HELP)
    entity_id = StrictCharField(
        max_length=GRAPH_ID_MAX_LENGTH,
        required=False,
        allow_null=True,
        help_text="The entity (subject of memory items) it stands for, one its scope sees.",
    )


class GraphNodeCreateSerializer(GraphNodeChangeSerializer):
    """A node written into one exact scope: merged into the node of the same type and name
    there, if there is one."""

    agent_id = scope_id_field("The agent whose memory it is.", required=True)
    user_id = scope_id_field("The user, or none for every user of the agent.")
    project_id = scope_id_field("The project, or none.")
    thread_id = scope_id_field("The thread, or none.")
    name = _text(MAX_NAME, NAME_HELP)


class GraphNodeUpdateSerializer(GraphNodeChangeSerializer):
    """The fields to change; those left out keep their values. ``evidence`` replaces the
    node's quotes."""

    name = _text(MAX_NAME, NAME_HELP, required=False)


class GraphEdgeChangeSerializer(serializers.Serializer):
    properties = JSONObjectField(required=False, help_text="Anything else known of it.")
    weight = StrictFloatField(required=False, min_value=0, help_text="How strong it is.")
    evidence = evidence_field()
    valid_from = moment_field(VALID_FROM_HELP)
    valid_to = moment_field(VALID_TO_HELP)


class GraphEdgeCreateSerializer(GraphEdgeChangeSerializer):
    """An edge between two nodes of one scope, the scope it is written in: merged into the
    edge they have of that relation, if they have one."""

    source = graph_id_field("The node it goes from.")  # type: ignore[assignment]  # a field
    target = graph_id_field("The node it goes to, of the source's scope.")
    relation = _text(MAX_RELATION, RELATION_HELP)


class GraphEdgeUpdateSerializer(GraphEdgeChangeSerializer):
    """The fields to change; those left out keep their values. ``evidence`` replaces the
    edge's quotes."""

    relation = _text(MAX_RELATION, RELATION_HELP, required=False)


class GraphMergeSerializer(serializers.Serializer):
    keep = graph_id_field("The node that stays, with the others' names, quotes and edges.")
    merge = serializers.ListField(
        child=graph_id_field("A node to merge into it."),
        min_length=1,
        max_length=MAX_NODES,
        help_text="The nodes merged into it and deleted, of its scope.",
    )


class GraphRejectSerializer(serializers.Serializer):
    reason = StrictCharField(
        max_length=RejectGraphNodes.max_reason,
        pattern=NOT_BLANK_PATTERN,
        pattern_message="Give the reason, a text not only of spaces.",
        help_text="Why it is wrong; kept in the admin log.",
    )


# --- queries -------------------------------------------------------------------------


class GraphNodeQuerySerializer(serializers.Serializer):
    agent_id = scope_id_field("Only this agent's nodes.")
    user_id = scope_id_field("Only the nodes of this user (not those shared by every user).")
    type = _text(MAX_TYPE, "Only nodes of this type.", required=False)
    status = statuses_field("Statuses separated by commas. Default: every status.")
    search = _text(MAX_NAME, "Only nodes whose name or alias holds these words.", required=False)
    limit = PageLimitField()
    cursor = cursor_field("node")


class GraphEdgeQuerySerializer(serializers.Serializer):
    agent_id = scope_id_field("Only this agent's edges.")
    user_id = scope_id_field("Only the edges of this user (not those shared by every user).")
    node = graph_id_field("Only edges from or to this node.", required=False)
    relation = _text(MAX_RELATION, "Only edges of this relation.", required=False)
    status = statuses_field("Statuses separated by commas. Default: every status.")
    limit = PageLimitField()
    cursor = cursor_field("edge")


class WalkQuerySerializer(serializers.Serializer):
    relations = relations_field()
    status = statuses_field(
        "Follow only edges and nodes of these statuses, separated by commas. Default: active."
    )


class NeighbourhoodQuerySerializer(WalkQuerySerializer):
    depth = QueryIntegerField(
        required=False, min_value=0, max_value=MAX_DEPTH, help_text="Edges from the node."
    )
    max_nodes = QueryIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_NODES,
        help_text="The nearest nodes to return, the node itself among them.",
    )
    as_of = StrictDateTimeField(
        required=False, help_text="Only edges and nodes that held at this moment."
    )


class GraphPathQuerySerializer(WalkQuerySerializer):
    source = graph_id_field("The node the path starts at.")  # type: ignore[assignment]  # a field
    target = graph_id_field("The node the path ends at.")
    max_depth = QueryIntegerField(
        required=False, min_value=1, max_value=MAX_DEPTH, help_text="The most edges it may have."
    )
