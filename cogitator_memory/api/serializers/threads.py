from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    StrictBooleanField,
    StrictCharField,
    ThreadMetadataField,
)
from cogitator_memory.threads.models import Thread
from cogitator_memory.threads.validation import THREAD_ID_PATTERN

# THREAD_ID_PATTERN ends in "$", which also lets a trailing newline through.
THREAD_ID = THREAD_ID_PATTERN.pattern.removesuffix("$") + r"\Z"
THREAD_ID_MESSAGE = (
    "A thread id is 1 to 255 characters: letters, digits and _ . : @ -, starting with a "
    "letter or digit."
)
ENTRY_ID_MAX_LENGTH = 64


def thread_id_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(
        pattern=THREAD_ID, pattern_message=THREAD_ID_MESSAGE, max_length=255, **kwargs
    )


def entry_id_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=ENTRY_ID_MAX_LENGTH, **kwargs)


class ThreadSerializer(serializers.ModelSerializer):
    active_leaf_id = serializers.CharField(read_only=True, allow_null=True)

    class Meta:
        model = Thread
        fields = ["id", "agent_id", "metadata", "active_leaf_id", "created_at", "updated_at"]
        read_only_fields = fields


class ThreadCreateSerializer(serializers.Serializer):
    id = thread_id_field(
        required=False,
        help_text="Optional: an id of your own. With the id of a thread you can see, the "
        "call is an upsert that merges the metadata and keeps the entries.",
    )
    agent_id = StrictCharField(
        max_length=255,
        pattern=NOT_BLANK_PATTERN,
        pattern_message="An agent id is a text of at most 255 characters, not only spaces.",
    )
    metadata = ThreadMetadataField(required=False, default=dict)


class ThreadUpdateSerializer(serializers.Serializer):
    metadata = ThreadMetadataField()
    replace = StrictBooleanField(
        required=False, default=False, help_text="Replace the metadata instead of merging."
    )


class ThreadPageSerializer(serializers.Serializer):
    results = ThreadSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
    next = serializers.URLField(allow_null=True)


class ForkSerializer(serializers.Serializer):
    at_entry_id = entry_id_field()
    new_thread_id = thread_id_field(required=False)


class RewindSerializer(serializers.Serializer):
    to_entry_id = entry_id_field()


class CheckoutSerializer(serializers.Serializer):
    entry_id = entry_id_field()
