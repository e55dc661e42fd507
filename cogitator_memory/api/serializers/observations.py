"""Observations of entities as the API reads them: the exact scope asked about, and each
observation with the items it stands on."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers.files import scope_id_field
from cogitator_memory.api.serializers.upkeep import UpkeepScopeSerializer
from cogitator_memory.files.models import Author
from cogitator_memory.upkeep.observation_files import ObservationRecord

_DATETIME = serializers.DateTimeField()


class ObservationQuerySerializer(UpkeepScopeSerializer):
    """Whose observations: exactly one scope (an agent, and optionally a user, a project
    and a thread), not those shared wider."""

    agent_id = scope_id_field("The agent whose observations these are.", required=True)
    user_id = scope_id_field("The user (absent: the agent's observations of no user).")
    project_id = scope_id_field("The project (absent: of no project).")
    thread_id = scope_id_field("The thread (absent: of no thread).")


class ObservationSerializer(serializers.Serializer):
    """What a model made of the facts about one entity, with the items it stands on."""

    entity_id = serializers.CharField()
    name = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField(), help_text="Other names.")
    path = serializers.CharField(help_text="The memory file it is kept in.")
    text = serializers.CharField(help_text="Its statements, one a line.")
    item_ids = serializers.ListField(
        child=serializers.CharField(), help_text="The memory items its statements stand on."
    )
    based_on = serializers.CharField(help_text="A fingerprint of the facts it was written from.")
    author = serializers.ChoiceField(choices=Author.choices)
    updated_at = serializers.DateTimeField()

    def to_representation(self, instance: ObservationRecord) -> dict[str, Any]:
        file = instance.file
        return {
            "entity_id": instance.entity_id,
            "name": instance.name,
            "aliases": list(instance.aliases),
            "path": instance.path,
            "text": instance.text,
            "item_ids": list(instance.item_ids),
            "based_on": instance.based_on,
            "author": file.author if file is not None else Author.MEMORY,
            "updated_at": _DATETIME.to_representation(file.updated_at) if file else None,
        }


class ObservationListSerializer(serializers.Serializer):
    results = ObservationSerializer(many=True, help_text="The most recently written first.")
