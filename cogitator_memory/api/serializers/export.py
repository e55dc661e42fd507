"""The export of a user's memory: its query, and the document it streams.

The document is written by ``export.services`` as it is read, never through these
serializers; they describe it in the OpenAPI schema, reusing the components of the
answers about each kind of row (``Thread``, ``Entry``, ``ItemDetail``, ``FileVersion``,
``Session``), so a client reads a row of the export as it reads the same row anywhere else.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.utils import html

from cogitator_memory.api.serializers.entries import EntrySerializer
from cogitator_memory.api.serializers.fields import NOT_BLANK_PATTERN, StrictCharField
from cogitator_memory.api.serializers.files import FileVersionSerializer
from cogitator_memory.api.serializers.items import (
    SCOPE_ID_MESSAGE,
    ExtractionRunSerializer,
    ItemDetailSerializer,
)
from cogitator_memory.api.serializers.sessions import SessionSerializer
from cogitator_memory.api.serializers.threads import ThreadSerializer
from cogitator_memory.export.services import FORMAT, MAX_AGENTS
from cogitator_memory.jobs import RunStatus


class QueryListField(serializers.ListField):
    """A query parameter that may be repeated (``?agent_id=a&agent_id=b``): exactly the
    values given under its name (DRF's own also reads ``agent_id[0]=a``)."""

    def get_value(self, dictionary: Any) -> Any:
        if html.is_html_input(dictionary):
            values = dictionary.getlist(self.field_name)
            return values if values else serializers.empty
        return super().get_value(dictionary)


class UserExportQuerySerializer(serializers.Serializer):
    agent_id = QueryListField(
        child=StrictCharField(
            max_length=255, pattern=NOT_BLANK_PATTERN, pattern_message=SCOPE_ID_MESSAGE
        ),
        required=False,
        min_length=1,
        max_length=MAX_AGENTS,
        help_text="Only the memory of this agent; repeat it for several. Default: every "
        "agent your grants reach for the user.",
    )


class ExportedThreadSerializer(ThreadSerializer):
    """A thread with every entry of every branch, in the order they were added (seq)."""

    entries = EntrySerializer(many=True)

    class Meta(ThreadSerializer.Meta):
        fields = [*ThreadSerializer.Meta.fields, "entries"]
        read_only_fields = fields


class ExportedEntitySerializer(serializers.Serializer):
    """What items are about (a person, a place, the user themself), of the user's scope."""

    id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField(allow_blank=True)
    agent_id = serializers.CharField()
    user_id = serializers.CharField()
    project_id = serializers.CharField(required=False)
    thread_id = serializers.CharField(required=False)
    aliases = serializers.JSONField(help_text="Other names of the entity, as stored.")
    created_at = serializers.DateTimeField()


class ExportedExtractionRunSerializer(ExtractionRunSerializer):
    """An extraction run of one of the user's threads: status, counts and times (what a
    worker met on failure is left out)."""

    error = None  # type: ignore[assignment]


class ExportedCompactionRunSerializer(serializers.Serializer):
    """A compaction run of one of the user's threads (what a worker met on failure is left
    out)."""

    id = serializers.CharField()
    thread_id = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    forced = serializers.BooleanField()
    compaction_entry_id = serializers.CharField(allow_null=True)
    attempts = serializers.IntegerField(min_value=0)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class ExportCountsSerializer(serializers.Serializer):
    """How many records the document holds, of each kind."""

    threads = serializers.IntegerField(min_value=0)
    entries = serializers.IntegerField(min_value=0)
    items = serializers.IntegerField(min_value=0)
    evidence = serializers.IntegerField(min_value=0)
    entities = serializers.IntegerField(min_value=0)
    file_versions = serializers.IntegerField(min_value=0)
    sessions = serializers.IntegerField(min_value=0)
    extraction_runs = serializers.IntegerField(min_value=0)
    compaction_runs = serializers.IntegerField(min_value=0)
    graph_nodes = serializers.IntegerField(min_value=0)
    graph_edges = serializers.IntegerField(min_value=0)


class UserExportSerializer(serializers.Serializer):
    """Everything memory keeps of one user, within your grants. Records are in the
    shapes the API answers with elsewhere; the lists come in this order."""

    format = serializers.CharField(help_text=f"What the document is: {FORMAT}.")
    format_version = serializers.IntegerField(
        min_value=1, help_text="Raised when a record changes in a way a reader would misread."
    )
    user_id = serializers.CharField()
    agents = serializers.ListField(
        child=serializers.CharField(), help_text="The agents whose memory of the user it holds."
    )
    generated_at = serializers.DateTimeField()
    threads = ExportedThreadSerializer(many=True, help_text="The user's threads.")
    items = ItemDetailSerializer(
        many=True, help_text="Memory items of the user's scope, every status, with evidence."
    )
    entities = ExportedEntitySerializer(many=True)
    file_versions = FileVersionSerializer(
        many=True, help_text="Every version of the memory files of the user's scope."
    )
    sessions = SessionSerializer(many=True, help_text="The user's channel sessions.")
    extraction_runs = ExportedExtractionRunSerializer(many=True)
    compaction_runs = ExportedCompactionRunSerializer(many=True)
    graph_nodes = serializers.ListField(
        child=serializers.DictField(),
        help_text="Nodes of the knowledge graph of the user's scope, every status: id, "
        "scope, type, name, aliases, properties, trust, status, valid time, evidence.",
    )
    graph_edges = serializers.ListField(
        child=serializers.DictField(),
        help_text="Edges of the knowledge graph of the user's scope, every status: id, "
        "scope, source_id, relation, target_id, weight, properties, trust, status, valid "
        "time, evidence.",
    )
    counts = ExportCountsSerializer()
