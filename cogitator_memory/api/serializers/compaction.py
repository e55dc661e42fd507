"""Compaction runs and compacted history."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers import enums
from cogitator_memory.api.serializers.entries import EntrySerializer
from cogitator_memory.api.serializers.threads import entry_id_field
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.jobs import RunStatus

_DATETIME = serializers.DateTimeField()


class CompactionRunSerializer(serializers.Serializer):
    """A compaction asked for: its status and the compaction entry it wrote."""

    id = serializers.CharField(help_text="The run's id, also the Celery task's id.")
    thread_id = serializers.CharField()
    status = enums.named_enum(enums.RUN_STATUS, choices=RunStatus.choices)
    forced = serializers.BooleanField(
        help_text="Asked for through the API: compacts whatever the thread's size."
    )
    compaction_entry_id = serializers.CharField(
        allow_null=True,
        help_text="The compaction entry written; null until done, when there was "
        "nothing to compact, or once that entry was deleted.",
    )
    attempts = serializers.IntegerField(min_value=0)
    error = serializers.CharField(allow_blank=True, help_text="The last failure, if any.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: CompactionRun) -> dict[str, Any]:
        def moment(value: Any) -> Any:
            return None if value is None else _DATETIME.to_representation(value)

        return {
            "id": instance.pk,
            "thread_id": instance.thread_id,
            "status": instance.status,
            "forced": instance.forced,
            "compaction_entry_id": instance.compaction_entry_id or None,
            "attempts": instance.attempts,
            "error": instance.error,
            "created_at": moment(instance.created_at),
            "started_at": moment(instance.started_at),
            "finished_at": moment(instance.finished_at),
        }


class CompactedHistoryQuerySerializer(serializers.Serializer):
    leaf_id = entry_id_field(
        required=False, help_text="The branch ending at this entry; the active one by default."
    )


class CompactedHistorySerializer(serializers.Serializer):
    results = EntrySerializer(
        many=True,
        help_text="The newest compaction entry first (event.summary is its text), then the "
        "entries it kept and everything after it; the whole branch when it was never "
        "compacted.",
    )
