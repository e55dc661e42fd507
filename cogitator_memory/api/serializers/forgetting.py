"""What the forgetting endpoints take and answer: a cascade's report counted
(``CascadeReport.counts``: lists of ids as their lengths), the requests to forget, and the
forget run to poll.

A report is answered counted, never with ids: a cascade takes copies in forks and derived
memory wherever they are, also in threads the caller does not reach, whose ids the caller
must not learn.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers import enums
from cogitator_memory.api.serializers.entries import EntrySerializer
from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    QueryBooleanField,
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
)
from cogitator_memory.api.serializers.threads import ThreadSerializer
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.cascade.runs import AGENT_ID_MAX_LENGTH, MAX_AGENTS
from cogitator_memory.grants import USER_ID_MAX_LENGTH
from cogitator_memory.jobs import RunStatus

__all__ = [
    "CascadeCountsSerializer",
    "CascadeReportSerializer",
    "EntryDeleteQuerySerializer",
    "ForgetRequestSerializer",
    "ForgetRunSerializer",
    "RedactWithRepliesSerializer",
    "RedactedEntrySerializer",
    "RewoundThreadSerializer",
]

_DATETIME = serializers.DateTimeField()


def _count(help_text: str = "") -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0, help_text=help_text)


class EntriesCountsSerializer(serializers.Serializer):
    deleted = _count("Entries deleted: the chosen ones, replies, copies in forks, events.")
    redacted = _count("Entries redacted.")


class ItemsCountsSerializer(serializers.Serializer):
    purged = _count("Memory items that stood only on what went, or of a forgotten scope.")
    trimmed = _count("Memory items that lost the quotes of what went.")
    stale = _count("Memory items marked stale (a rewind).")


class FactsCountsSerializer(serializers.Serializer):
    deleted = _count()
    trimmed = _count()


class GraphCountsSerializer(serializers.Serializer):
    nodes = _count()
    edges = _count()
    trimmed = _count()


class CascadeCountsSerializer(serializers.Serializer):
    """What a cascade removed, redacted or marked, counted."""

    entries = EntriesCountsSerializer()
    threads = _count("Threads deleted.")
    threads_changed = _count("Threads that stay but lost or had redacted entries.")
    summaries = _count("Compaction summaries deleted (they covered or quoted what went).")
    recompacting = _count("Threads handed to the background compaction again.")
    items = ItemsCountsSerializer()
    entities = _count()
    facts = FactsCountsSerializer()
    graph = GraphCountsSerializer()
    file_versions = _count("Memory file versions redacted or deleted.")
    files = _count("Memory files deleted.")
    playbook_rules = _count()
    vectors = _count("Vectors deleted.")
    vectors_queued = _count("Vectors sent to an outside store for deletion (outbox).")
    keyword_documents = _count()
    sessions = _count("Channel sessions deleted.")
    runs = _count("Jobs of record deleted, or cleaned of what went.")
    extraction_windows = _count()
    admin_log_entries = _count("Admin log rows about what went, deleted.")
    task_results = _count("Celery results of deleted runs, forgotten.")
    threads_out_of_reach = _count("Threads listing a forgotten user that the grants do not reach.")
    other = serializers.DictField(
        child=serializers.IntegerField(min_value=0),
        help_text="Counts of stores this report has no field for.",
    )


class CascadeReportSerializer(serializers.Serializer):
    """The answer of a deletion: what went with it, counted."""

    report = CascadeCountsSerializer()


class RedactedEntrySerializer(EntrySerializer):
    """The entry as it now stands, and what went with it, counted."""

    report = CascadeCountsSerializer(required=False)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        entry, counts = instance
        return {**super().to_representation(entry), "report": counts}


class RewoundThreadSerializer(ThreadSerializer):
    """The thread as it now stands, and what the rewind marked, counted."""

    report = CascadeCountsSerializer(read_only=True)

    class Meta(ThreadSerializer.Meta):
        fields = [*ThreadSerializer.Meta.fields, "report"]
        read_only_fields = fields

    def to_representation(self, instance: Any) -> dict[str, Any]:
        thread, counts = instance
        return {**super().to_representation(thread), "report": counts}


class EntryDeleteQuerySerializer(serializers.Serializer):
    keep_replies = QueryBooleanField(
        required=False,
        default=False,
        help_text="true: delete the entry alone. Default: a user message takes its replies "
        "(the entries after it on every branch up to the next user message).",
    )


class RedactWithRepliesSerializer(serializers.Serializer):
    reason = StrictCharField(max_length=1000, required=False)
    at = StrictDateTimeField(required=False)
    keep_replies = StrictBooleanField(
        required=False,
        default=False,
        help_text="true: redact the entry alone. Default: a user message's replies are "
        "redacted too (events among them are deleted).",
    )


class ForgetRequestSerializer(serializers.Serializer):
    agent_ids = serializers.ListField(
        child=StrictCharField(
            max_length=AGENT_ID_MAX_LENGTH,
            pattern=NOT_BLANK_PATTERN,
            pattern_message="An agent id is a text of at most 255 characters, not only spaces.",
        ),
        required=False,
        min_length=1,
        max_length=MAX_AGENTS,
        help_text="Forget the user in these agents only (each must be granted to you for the "
        "user). Default: every agent your grants reach for the user.",
    )
    confirm = StrictCharField(
        max_length=USER_ID_MAX_LENGTH,
        help_text="The user id again, exactly: a guard against forgetting the wrong user.",
    )


class ForgetRunSerializer(serializers.Serializer):
    """A forgetting asked for: its status, its progress, and what it removed, counted."""

    id = serializers.CharField(help_text="The run's id, also the Celery task's id.")
    user_id = serializers.CharField()
    agent_ids = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="The agents; null: every agent (grants that reach every agent).",
    )
    status = enums.named_enum(enums.RUN_STATUS, choices=RunStatus.choices)
    done = serializers.IntegerField(min_value=0, help_text="Batches done.")
    total = serializers.IntegerField(
        min_value=0, allow_null=True, help_text="Batches in all; null until the run starts."
    )
    counts = CascadeCountsSerializer(
        allow_null=True, help_text="What went so far (all of it once done); null before."
    )
    attempts = serializers.IntegerField(min_value=0)
    error = serializers.CharField(allow_blank=True, help_text="The last failure, if any.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: ForgetRun) -> dict[str, Any]:
        def moment(value: Any) -> Any:
            return None if value is None else _DATETIME.to_representation(value)

        return {
            "id": instance.pk,
            "user_id": instance.user_id,
            "agent_ids": instance.agent_ids,
            "status": instance.status,
            "done": instance.done,
            "total": instance.total,
            "counts": instance.counts,
            "attempts": instance.attempts,
            "error": instance.error,
            "created_at": moment(instance.created_at),
            "started_at": moment(instance.started_at),
            "finished_at": moment(instance.finished_at),
        }
