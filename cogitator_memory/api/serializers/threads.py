from __future__ import annotations

from rest_framework import serializers

from cogitator_memory.threads.models import Thread
from cogitator_memory.threads.validation import THREAD_ID_PATTERN


class ThreadSerializer(serializers.ModelSerializer):
    active_leaf_id = serializers.CharField(read_only=True, allow_null=True)

    class Meta:
        model = Thread
        fields = ["id", "agent_id", "metadata", "active_leaf_id", "created_at", "updated_at"]
        read_only_fields = fields


class ThreadCreateSerializer(serializers.Serializer):
    id = serializers.RegexField(
        THREAD_ID_PATTERN,
        required=False,
        help_text="Optional: an id of your own. With the id of a thread you can see, the "
        "call is an upsert that merges the metadata and keeps the entries.",
    )
    agent_id = serializers.CharField(max_length=255)
    metadata = serializers.DictField(required=False, default=dict)


class ThreadUpdateSerializer(serializers.Serializer):
    metadata = serializers.DictField()
    replace = serializers.BooleanField(
        required=False, default=False, help_text="Replace the metadata instead of merging."
    )


class ThreadPageSerializer(serializers.Serializer):
    results = ThreadSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
    next = serializers.URLField(allow_null=True)


class ForkSerializer(serializers.Serializer):
    at_entry_id = serializers.CharField(max_length=64)
    new_thread_id = serializers.RegexField(THREAD_ID_PATTERN, required=False)


class RewindSerializer(serializers.Serializer):
    to_entry_id = serializers.CharField(max_length=64)


class CheckoutSerializer(serializers.Serializer):
    entry_id = serializers.CharField(max_length=64)
