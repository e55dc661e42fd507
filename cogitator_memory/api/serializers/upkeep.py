"""Upkeep between runs as the API asks for it and reports it: the scope a request names and
the run to poll."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers import enums
from cogitator_memory.api.serializers.files import scope_id_field
from cogitator_memory.grants import MemoryScope
from cogitator_memory.jobs import RunStatus
from cogitator_memory.upkeep.records import UpkeepRun, UpkeepWork

_DATETIME = serializers.DateTimeField()


class UpkeepScopeSerializer(serializers.Serializer):
    """Exactly one scope: an agent, and optionally a user, a project and a thread."""

    agent_id = scope_id_field("The agent whose memory it is.", required=True)
    user_id = scope_id_field("The user; none for what every user of the agent shares.")
    project_id = scope_id_field("The project, if the scope has one.")
    thread_id = scope_id_field("The thread, if the scope has one.")

    def memory_scope(self) -> MemoryScope:
        data: dict[str, Any] = self.validated_data
        return MemoryScope(
            agent_id=data["agent_id"],
            user_id=data.get("user_id"),
            project_id=data.get("project_id"),
            thread_id=data.get("thread_id"),
        )


class UpkeepRunSerializer(serializers.Serializer):
    """Upkeep asked for: its scope, what it does, its status and what it did."""

    id = serializers.CharField(help_text="The run's id.")
    work = serializers.ChoiceField(
        choices=UpkeepWork.choices,
        help_text="observations: refresh the scope's observations; consolidation: dedupe, "
        "then fold lessons into the playbook; pass: both (the sleep-time pass).",
    )
    agent_id = serializers.CharField()
    user_id = serializers.CharField(allow_null=True)
    project_id = serializers.CharField(allow_null=True)
    thread_id = serializers.CharField(allow_null=True)
    status = enums.named_enum(enums.RUN_STATUS, choices=RunStatus.choices)
    attempts = serializers.IntegerField(min_value=0)
    report = serializers.DictField(
        allow_null=True,
        help_text="What it did, once done: model_calls, and per step its counts "
        "(observations: written, deleted; dedupe: stale, complete; playbook: edits, "
        "lessons, path).",
    )
    error = serializers.CharField(allow_blank=True, help_text="The last failure, if any.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: UpkeepRun) -> dict[str, Any]:
        def moment(value: Any) -> Any:
            return None if value is None else _DATETIME.to_representation(value)

        return {
            "id": instance.pk,
            "work": instance.work,
            "agent_id": instance.agent_id,
            "user_id": instance.user_id,
            "project_id": instance.project_id,
            "thread_id": instance.thread_id,
            "status": instance.status,
            "attempts": instance.attempts,
            "report": instance.report,
            "error": instance.error,
            "created_at": moment(instance.created_at),
            "started_at": moment(instance.started_at),
            "finished_at": moment(instance.finished_at),
        }
