"""The playbook of one scope and its draft as the API shows them: each version's text, its
rules with the lessons they name, and who wrote it when; the draft also with the id a
review decision takes and the playbook version it was made from."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers.upkeep import UpkeepScopeSerializer
from cogitator_memory.files.models import Author
from cogitator_memory.upkeep.playbook import PlaybookFile
from cogitator_memory.upkeep.review import MAX_ID_DIGITS

# A draft's id is the key of its file head: a whole number; a longer text names none.
DRAFT_ID_MAX_LENGTH = MAX_ID_DIGITS

_DATETIME = serializers.DateTimeField()


class PlaybookQuerySerializer(UpkeepScopeSerializer):
    """Whose playbook: exactly one scope (an agent, and optionally a user, a project and a
    thread), not one shared wider."""


class PlaybookRuleSerializer(serializers.Serializer):
    text = serializers.CharField(help_text="The rule as the file holds it, lesson tags included.")
    lesson_ids = serializers.ListField(
        child=serializers.CharField(), help_text="The lessons (memory items) the rule names."
    )


class PlaybookVersionSerializer(serializers.Serializer):
    """A version of the playbook that memory or a person wrote."""

    text = serializers.CharField(help_text="The whole file.")
    rules = PlaybookRuleSerializer(many=True)
    version_id = serializers.CharField(help_text="The file version.")
    sha256 = serializers.CharField(help_text="The hash of the text, as a file write expects it.")
    author = serializers.ChoiceField(choices=Author.choices)
    written_at = serializers.DateTimeField()

    def to_representation(self, instance: PlaybookFile) -> dict[str, Any]:
        return {
            "text": instance.text,
            "rules": [
                {"text": rule.text, "lesson_ids": list(rule.lesson_ids)} for rule in instance.rules
            ],
            "version_id": instance.version_id,
            "sha256": instance.sha256,
            "author": instance.author,
            "written_at": _DATETIME.to_representation(instance.created_at),
        }


class PlaybookDraftSerializer(PlaybookVersionSerializer):
    """The draft waiting for review: the playbook a fold would make, to promote or discard."""

    id = serializers.CharField(help_text="The draft, as its promotion and discard name it.")
    made_from_version_id = serializers.CharField(
        allow_null=True,
        help_text="The playbook version the draft was made from (null: there was no "
        "playbook). Promotion is refused once the playbook moved on from it.",
    )
    made_from_sha256 = serializers.CharField(allow_null=True)

    def to_representation(self, instance: PlaybookFile) -> dict[str, Any]:
        made_from = instance.playbook.made_from
        return {
            "id": self.context["draft_id"],
            **super().to_representation(instance),
            "made_from_version_id": made_from.version_id if made_from else None,
            "made_from_sha256": made_from.sha256 if made_from else None,
        }


class PlaybookStateSerializer(serializers.Serializer):
    """A scope's playbook and its draft; null where there is none."""

    playbook = PlaybookVersionSerializer(
        allow_null=True, help_text="The newest version memory or a person wrote."
    )
    draft = PlaybookDraftSerializer(
        allow_null=True,
        help_text="The draft waiting for review, as memory wrote it (a model's is never shown).",
    )
