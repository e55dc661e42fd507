from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers import enums
from cogitator_memory.api.serializers.fields import (
    EntryContentField,
    JSONObjectField,
    QueryBooleanField,
    QueryIntegerField,
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
    StrictIntegerField,
    ToolCallsField,
    ToolResultsField,
)
from cogitator_memory.api.serializers.threads import entry_id_field
from cogitator_memory.threads.models import Entry, EntryType, Role
from cogitator_memory.threads.selectors import ENTRY_CURSOR_PATTERN

ENTRY_TYPE_CHOICES = EntryType.choices
_TYPE_NAMES = "|".join(choice.value for choice in EntryType)
# "all", or entry types separated by commas.
TYPES_PATTERN = rf"^(all|({_TYPE_NAMES})(,({_TYPE_NAMES}))*)\Z"
TYPES_MESSAGE = (
    "'all', or entry types separated by commas (no spaces): "
    + ", ".join(choice.value for choice in EntryType)
    + "."
)


class EntrySerializer(serializers.Serializer):
    """An entry; fields never set are absent from the body, not null."""

    id = serializers.CharField()
    thread_id = serializers.CharField()
    parent_id = serializers.CharField(allow_null=True)
    seq = serializers.IntegerField()
    type = enums.named_enum(enums.ENTRY_TYPE, choices=ENTRY_TYPE_CHOICES)
    token_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    role = enums.named_enum(enums.ROLE, choices=Role.choices, required=False)
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
    """A new entry. A message needs its role, and content or tool calls; a tool result
    needs content or tool results; a session event needs its event payload, which no
    message or tool result carries."""

    type = enums.named_enum(
        enums.ENTRY_TYPE,
        choices=ENTRY_TYPE_CHOICES,
        default=EntryType.MESSAGE.value,
    )
    role = enums.named_enum(enums.ROLE, choices=Role.choices, required=False)
    content = EntryContentField(required=False, help_text="A text or a list of parts.")
    name = StrictCharField(max_length=255, required=False)
    tool_call_id = StrictCharField(max_length=255, required=False)
    tool_calls = ToolCallsField(required=False)
    tool_results = ToolResultsField(required=False)
    event = JSONObjectField(required=False, help_text="The payload of a session event.")
    metadata = JSONObjectField(required=False)
    token_count = StrictIntegerField(min_value=0, max_value=2**31 - 1, required=False)
    created_at = StrictDateTimeField(required=False)
    parent_id = entry_id_field(
        required=False,
        allow_null=True,
        help_text="Absent: after the active leaf. An entry id: on that entry's branch. "
        "null: a new root.",
    )
    activate = StrictBooleanField(
        required=False, default=True, help_text="Move the active leaf to the new entry."
    )


class EntryListQuerySerializer(serializers.Serializer):
    types = StrictCharField(
        required=False,
        pattern=TYPES_PATTERN,
        pattern_message=TYPES_MESSAGE,
        help_text="'all', or entry types separated by commas (default: message,tool_result).",
    )
    limit = QueryIntegerField(
        min_value=1, max_value=500, required=False, default=50, help_text="Page size."
    )
    before = StrictDateTimeField(required=False, help_text="Only entries created before.")
    after = StrictDateTimeField(required=False, help_text="Only entries created after.")
    include_tool_calls = QueryBooleanField(
        required=False, default=False, help_text="true or false: with tool calls and results."
    )
    cursor = StrictCharField(
        required=False,
        pattern=ENTRY_CURSOR_PATTERN.pattern,
        pattern_message="This cursor was not made by page_entries.",
        help_text="next_cursor of the previous page: the position before which the page "
        "ends, `<microseconds since 1970-01-01T00:00:00Z>.<seq>` (created_at and seq of "
        "the oldest entry seen).",
    )


class EntryPageSerializer(serializers.Serializer):
    results = EntrySerializer(many=True)
    next_cursor = StrictCharField(
        allow_null=True,
        pattern=ENTRY_CURSOR_PATTERN.pattern,
        help_text="Pass as cursor for the page of older entries.",
    )


class PathQuerySerializer(serializers.Serializer):
    leaf_id = entry_id_field(required=False)
    limit = QueryIntegerField(min_value=1, max_value=500, required=False, default=50)
    before = entry_id_field(
        required=False, help_text="An entry id: only entries older on the branch."
    )
    types = StrictCharField(required=False, pattern=TYPES_PATTERN, pattern_message=TYPES_MESSAGE)
    include_tool_calls = QueryBooleanField(
        required=False, default=False, help_text="true or false: with tool calls and results."
    )


class PathPageSerializer(serializers.Serializer):
    results = EntrySerializer(many=True)
    next_before = serializers.CharField(
        allow_null=True, help_text="Pass as before for the older part of the branch."
    )


def parse_types(value: str | None) -> Any:
    """The ``types`` query parameter as the selectors take it."""
    if value is None or value == "":
        return None
    if value == "all":
        return "all"
    return [part.strip() for part in value.split(",") if part.strip()]
