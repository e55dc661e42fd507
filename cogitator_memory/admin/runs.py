"""Extraction runs in the admin: read-only, the runs of the threads a staff user's grants
reach, newest first, with a link to each run's thread."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.selectors import scope_for_user
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.threads.models import Thread


@admin.register(ExtractionRun)
class ExtractionRunAdmin(LargeTableAdmin):
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

    def get_queryset(self, request: HttpRequest) -> QuerySet[ExtractionRun]:
        visible = Thread.objects.visible_to(scope_for_user(request.user))
        return super().get_queryset(request).filter(thread__in=visible)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A run is the record of what was asked for; it goes with its thread.
        return False

    @admin.display(description=_("thread"))
    def thread_link(self, obj: ExtractionRun) -> str:
        url = reverse(
            "admin:cogitator_memory_thread_change",
            args=[quote(obj.thread_id)],
            current_app=self.admin_site.name,
        )
        return format_html('<a href="{}">{}</a>', url, obj.thread_id)

    @admin.display(description=_("windows"))
    def progress(self, obj: ExtractionRun) -> str:
        total = "?" if obj.windows_total is None else str(obj.windows_total)
        return f"{obj.windows_done}/{total}"
