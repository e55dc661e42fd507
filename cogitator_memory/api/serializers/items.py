"""Memory items, their evidence and extraction runs, as the API reads and writes them."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from cogitator_memory.api.serializers import enums
from cogitator_memory.api.serializers.fields import (
    NOT_BLANK_PATTERN,
    PageLimitField,
    StrictCharField,
    StrictDateTimeField,
)
from cogitator_memory.items.models import (
    Evidence,
    ExtractionRun,
    ItemKind,
    ItemStatus,
    MemoryItem,
    RunStatus,
    Trust,
)
from cogitator_memory.items.review import RejectItems
from cogitator_memory.items.selectors import ITEM_CURSOR_PATTERN

_STATUS_NAMES = "|".join(choice.value for choice in ItemStatus)
_KIND_NAMES = "|".join(choice.value for choice in ItemKind)
STATUSES_PATTERN = rf"^({_STATUS_NAMES})(,({_STATUS_NAMES}))*\Z"
KINDS_PATTERN = rf"^({_KIND_NAMES})(,({_KIND_NAMES}))*\Z"
SCOPE_ID_MESSAGE = "A text of 1 to 255 characters, not only spaces."
# Item and run ids are a prefix and 32 hex digits; any longer one is missing.
ITEM_ID_MAX_LENGTH = 64


def _names(choices: Any) -> str:
    return ", ".join(choice.value for choice in choices)


def scope_id_field(help_text: str) -> StrictCharField:
    return StrictCharField(
        max_length=255,
        required=False,
        pattern=NOT_BLANK_PATTERN,
        pattern_message=SCOPE_ID_MESSAGE,
        help_text=help_text,
    )


class ItemQuerySerializer(serializers.Serializer):
    agent_id = scope_id_field("Only this agent's items.")
    user_id = scope_id_field("Only the items of this user (not those shared by every user).")
    status = StrictCharField(
        required=False,
        pattern=STATUSES_PATTERN,
        pattern_message=f"Statuses separated by commas (no spaces): {_names(ItemStatus)}.",
        help_text="Statuses separated by commas. Default: every status; with as_of or "
        "known_at, active and superseded.",
    )
    kind = StrictCharField(
        required=False,
        pattern=KINDS_PATTERN,
        pattern_message=f"Kinds separated by commas (no spaces): {_names(ItemKind)}.",
        help_text="Kinds separated by commas.",
    )
    subject_id = StrictCharField(
        required=False,
        max_length=64,
        help_text="Only items about this entity; with attribute, one slot.",
    )
    attribute = StrictCharField(
        required=False, max_length=255, help_text="Only items of this attribute."
    )
    as_of = StrictDateTimeField(
        required=False,
        help_text="Only the items that held in the world at this moment (default: known_at).",
    )
    known_at = StrictDateTimeField(
        required=False,
        help_text="Only the items memory held at this moment, as it knew them then "
        "(default: now, when as_of is given).",
    )
    limit = PageLimitField()
    cursor = StrictCharField(
        required=False,
        pattern=ITEM_CURSOR_PATTERN.pattern,
        pattern_message="This cursor was not made by the item list.",
        help_text="next_cursor of the previous page: `<microseconds since "
        "1970-01-01T00:00:00Z>~<item id>` (recorded_at and id of the last item seen).",
    )


class SubjectSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField(allow_blank=True)


_DATETIME = serializers.DateTimeField()
_OPTIONAL_MOMENTS = ("valid_to", "expired_at", "activated_at", "last_retrieved_at")


class ItemSerializer(serializers.Serializer):
    """A memory item; fields never set are absent from the body, not null."""

    id = serializers.CharField()
    kind = enums.named_enum(enums.ITEM_KIND, choices=ItemKind.choices)
    agent_id = serializers.CharField()
    user_id = serializers.CharField(required=False)
    project_id = serializers.CharField(required=False)
    thread_id = serializers.CharField(required=False)
    subject = SubjectSerializer()
    attribute = serializers.CharField()
    value = serializers.CharField(allow_blank=True)
    content = serializers.CharField(allow_blank=True)
    trust = enums.named_enum(enums.TRUST, choices=Trust.choices)
    verified = serializers.BooleanField(help_text="Whether its quotes hold in their entries.")
    confidence = serializers.FloatField(min_value=0, max_value=1)
    status = enums.named_enum(enums.ITEM_STATUS, choices=ItemStatus.choices)
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(required=False)
    recorded_at = serializers.DateTimeField()
    expired_at = serializers.DateTimeField(required=False)
    activated_at = serializers.DateTimeField(required=False)
    times_retrieved = serializers.IntegerField(min_value=0)
    last_retrieved_at = serializers.DateTimeField(required=False)
    stale_because = serializers.DictField(required=False)
    metadata = serializers.DictField()

    def to_representation(self, instance: MemoryItem) -> dict[str, Any]:
        data = instance.as_dict()
        data.pop("subject_id")
        subject = instance.subject
        data["subject"] = {"id": subject.pk, "name": subject.name, "kind": subject.kind}
        for name in ("valid_from", "recorded_at", *_OPTIONAL_MOMENTS):
            if name in data:
                data[name] = _DATETIME.to_representation(data[name])
        return data


class EvidenceSerializer(serializers.Serializer):
    """A quote the item stands on. ``entry_id`` and ``thread_id`` are absent when the
    entry is gone or in a thread you may not see; the quote stays."""

    id = serializers.IntegerField()
    quote = serializers.CharField(allow_blank=True)
    verified = serializers.BooleanField(help_text="Whether the quote holds in its entry.")
    entry_id = serializers.CharField(required=False)
    thread_id = serializers.CharField(required=False)
    tool_call_id = serializers.CharField(required=False)
    file_range = serializers.DictField(required=False)
    created_at = serializers.DateTimeField()

    def to_representation(self, instance: Evidence) -> dict[str, Any]:
        visible_threads: set[str] = self.context.get("visible_threads", set())
        data: dict[str, Any] = {
            "id": instance.pk,
            "quote": instance.quote,
            "verified": instance.verified,
            "created_at": _DATETIME.to_representation(instance.created_at),
        }
        entry = instance.entry
        if entry is not None and entry.thread_id in visible_threads:
            data["entry_id"] = entry.pk
            data["thread_id"] = entry.thread_id
        if instance.tool_call_id is not None:
            data["tool_call_id"] = instance.tool_call_id
        if isinstance(instance.file_range, dict):
            data["file_range"] = instance.file_range
        return data


class ItemDetailSerializer(ItemSerializer):
    evidence = EvidenceSerializer(many=True, help_text="The quotes it stands on.")

    def to_representation(self, instance: MemoryItem) -> dict[str, Any]:
        data = super().to_representation(instance)
        rows = instance.evidence.select_related("entry").order_by("id")
        data["evidence"] = EvidenceSerializer(rows, many=True, context=self.context).data
        return data


class ItemPageSerializer(serializers.Serializer):
    results = ItemSerializer(many=True)
    next_cursor = StrictCharField(
        allow_null=True,
        pattern=ITEM_CURSOR_PATTERN.pattern,
        help_text="Pass as cursor for the next page.",
    )
    next = serializers.URLField(allow_null=True, help_text="The URL of the next page.")


class ItemHistorySerializer(serializers.Serializer):
    results = ItemSerializer(many=True, help_text="The slot's states, in order of validity.")


class RejectSerializer(serializers.Serializer):
    # The rule is RejectItems' (the view passes the reason on); the schema says it too.
    reason = StrictCharField(
        max_length=RejectItems.max_reason,
        pattern=NOT_BLANK_PATTERN,
        pattern_message="Give the reason, a text not only of spaces.",
        help_text="Why the item is wrong; kept with it.",
    )


class ExtractionRunSerializer(serializers.Serializer):
    """An extraction asked for: its status, its progress, what it did."""

    id = serializers.CharField(help_text="The run's id, also the Celery task's id.")
    thread_id = serializers.CharField()
    status = enums.named_enum(enums.RUN_STATUS, choices=RunStatus.choices)
    windows_done = serializers.IntegerField(min_value=0)
    windows_total = serializers.IntegerField(
        min_value=0, allow_null=True, help_text="Windows to read; null until the run starts."
    )
    windows_skipped = serializers.IntegerField(
        min_value=0, help_text="Windows an earlier run had read."
    )
    calls = serializers.IntegerField(min_value=0, help_text="Model calls made.")
    items_written = serializers.IntegerField(min_value=0)
    attempts = serializers.IntegerField(min_value=0)
    error = serializers.CharField(allow_blank=True, help_text="The last failure, if any.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def to_representation(self, instance: ExtractionRun) -> dict[str, Any]:
        def moment(value: Any) -> Any:
            return None if value is None else _DATETIME.to_representation(value)

        return {
            "id": instance.pk,
            "thread_id": instance.thread_id,
            "status": instance.status,
            "windows_done": instance.windows_done,
            "windows_total": instance.windows_total,
            "windows_skipped": instance.windows_skipped,
            "calls": instance.calls,
            "items_written": instance.items_written,
            "attempts": instance.attempts,
            "error": instance.error,
            "created_at": moment(instance.created_at),
            "started_at": moment(instance.started_at),
            "finished_at": moment(instance.finished_at),
        }
