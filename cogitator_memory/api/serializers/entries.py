from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.threads.models import Entry, EntryType, Role

ENTRY_TYPE_CHOICES = EntryType.choices


class EntrySerializer(serializers.Serializer):
    """An entry; fields never set are absent from the body, not null."""

    id = serializers.CharField()
    thread_id = serializers.CharField()
    parent_id = serializers.CharField(allow_null=True)
    seq = serializers.IntegerField()
    type = serializers.ChoiceField(choices=ENTRY_TYPE_CHOICES)
    token_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    role = serializers.ChoiceField(choices=Role.choices, required=False)
    content = serializers.JSONField(required=False, help_text="A text or a list of parts.")
    name = serializers.CharField(required=False)
    tool_call_id = serializers.CharField(required=False)
    tool_calls = serializers.ListField(child=serializers.DictField(), required=False)
    tool_results = serializers.ListField(child=serializers.DictField(), required=False)
    event = serializers.DictField(required=False)
    metadata = serializers.DictField(required=False)
    redaction = serializers.DictField(required=False)

    def to_representation(self, instance: Entry) -> dict[str, Any]:
        data = instance.as_dict()
        data["created_at"] = serializers.DateTimeField().to_representation(data["created_at"])
        return data


class EntryCreateSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=ENTRY_TYPE_CHOICES, default=EntryType.MESSAGE.value)
    role = serializers.ChoiceField(choices=Role.choices, required=False)
    content = serializers.JSONField(required=False, help_text="A text or a list of parts.")
    name = serializers.CharField(max_length=255, required=False)
    tool_call_id = serializers.CharField(max_length=255, required=False)
    tool_calls = serializers.ListField(child=serializers.DictField(), required=False)
    tool_results = serializers.ListField(child=serializers.DictField(), required=False)
    event = serializers.DictField(required=False)
    metadata = serializers.DictField(required=False)
    token_count = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    created_at = serializers.DateTimeField(required=False)
    parent_id = serializers.CharField(
        max_length=64,
        required=False,
        allow_null=True,
        help_text="Absent: after the active leaf. An entry id: on that entry's branch. "
        "null: a new root.",
    )
    activate = serializers.BooleanField(
        required=False, default=True, help_text="Move the active leaf to the new entry."
    )

    def validate_content(self, value: Any) -> Any:
        if value is not None and not isinstance(value, str | list):
            raise serializers.ValidationError("Content must be a text or a list of parts.")
        return value


class EntryListQuerySerializer(serializers.Serializer):
    types = serializers.CharField(
        required=False,
        help_text="'all', or entry types separated by commas (default: message,tool_result).",
    )
    limit = serializers.IntegerField(
        min_value=1, max_value=500, required=False, default=50, help_text="Page size."
    )
    before = serializers.DateTimeField(required=False, help_text="Only entries created before.")
    after = serializers.DateTimeField(required=False, help_text="Only entries created after.")
    include_tool_calls = serializers.BooleanField(required=False, default=False)
    cursor = serializers.CharField(required=False, help_text="next_cursor of the previous page.")


class EntryPageSerializer(serializers.Serializer):
    results = EntrySerializer(many=True)
    next_cursor = serializers.CharField(
        allow_null=True, help_text="Pass as cursor for the page of older entries."
    )


class PathQuerySerializer(serializers.Serializer):
    leaf_id = serializers.CharField(max_length=64, required=False)
    limit = serializers.IntegerField(min_value=1, max_value=500, required=False, default=50)
    before = serializers.CharField(
        max_length=64, required=False, help_text="An entry id: only entries older on the branch."
    )
    types = serializers.CharField(required=False)
    include_tool_calls = serializers.BooleanField(required=False, default=False)


class PathPageSerializer(serializers.Serializer):
    results = EntrySerializer(many=True)
    next_before = serializers.CharField(
        allow_null=True, help_text="Pass as before for the older part of the branch."
    )


class RedactSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=1000, required=False)
    at = serializers.DateTimeField(required=False)


def parse_types(value: str | None) -> Any:
    """The ``types`` query parameter as the selectors take it."""
    if value is None or value == "":
        return None
    if value == "all":
        return "all"
    return [part.strip() for part in value.split(",") if part.strip()]
