"""Extraction runs in the admin: read-only, the runs of the threads a staff user's grants
reach, newest first, with a link to each run's thread."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.threads.models import Thread


# Read-only: a run is the record of what was asked for; it goes with its thread.
@admin.register(ExtractionRun)
class ExtractionRunAdmin(GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin, LargeTableAdmin):
    list_display = (
        "id",
        "thread_link",
        "status",
        "progress",
        "items_written",
        "attempts",
        "created_at",
        "finished_at",
        "error",
    )
    # Choices of a choices field: no query for the filter's values.
    list_filter = ("status",)
    ordering = ("-created_at", "-id")
    sortable_by = ("created_at",)
    readonly_fields = (
        "thread",
        "status",
        "windows_done",
        "windows_total",
        "windows_skipped",
        "calls",
        "items_written",
        "attempts",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "updated_at",
    )

    def visible_rows(self, queryset: QuerySet[Any], grants: Grants) -> QuerySet[Any]:
        # Runs are reached through their threads.
        return queryset.filter(thread__in=Thread.objects.visible_to(grants))

    @admin.display(description=_("windows"))
    def progress(self, obj: ExtractionRun) -> str:
        total = "?" if obj.windows_total is None else str(obj.windows_total)
        return f"{obj.windows_done}/{total}"
