"""Outbox messages in the admin: what a store outside the database still has to do.

Read-only: a message is written with the change it follows and deleted once carried out.
"Publish now" carries the chosen messages out at once (after an outage was fixed, say),
through the same service the sweeper task calls.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.admin.filters import IndexedValuesFilter
from cogitator_memory.admin.records import ReadOnlyAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.outbox import services as outbox
from cogitator_memory.outbox.models import OutboxMessage


class TopicFilter(IndexedValuesFilter):
    title = _("topic")
    parameter_name = "topic"


# Read-only: deleting a message would drop a change a store still owes.
@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdmin, LargeTableAdmin):
    list_display = ("id", "topic", "attempts", "next_attempt_at", "created_at", "last_error")
    list_filter = (TopicFilter,)
    ordering = ("id",)
    # Sorted by the key only: an outage can leave millions of messages waiting, and the
    # other indexes (cm_outbox_topic, cm_outbox_due) end with the key ascending, so a
    # descending sort by topic or next attempt would sort whole groups of messages.
    sortable_by = ("id",)
    readonly_fields = (
        "topic",
        "payload",
        "attempts",
        "next_attempt_at",
        "created_at",
        "last_error",
    )
    actions = ["publish_now"]

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    @admin.action(description=_("Publish the selected messages now"), permissions=["publish"])
    def publish_now(self, request: HttpRequest, queryset: QuerySet[OutboxMessage]) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        OutboxMessage.objects.filter(pk__in=ids).update(next_attempt_at=timezone.now())
        result = outbox.publish(ids)
        level = messages.SUCCESS if not result.failed else messages.WARNING
        self.message_user(
            request,
            _("%(done)d done, %(failed)d failed again (retried later).")
            % {"done": result.done, "failed": result.failed},
            level,
        )
