"""Extraction and compaction runs in the admin, side by side: read-only, the runs of the
threads a staff user's grants reach, newest first, with a link to each run's thread (and
to the compaction entry a compaction run wrote). Both lists fit a 1400 px window: the
ids wrap, and a run's times share one column."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.jobs import JobRun
from cogitator_memory.threads.models import Thread

__all__ = ["CompactionRunAdmin", "ExtractionRunAdmin", "RunAdmin"]


# Read-only: a run is the record of what was asked for; it goes with its thread.
class RunAdmin(GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin, LargeTableAdmin):
    """What the run lists share: the runs of visible threads, newest first."""

    ordering = ("-created_at", "-id")

    class Media:
        css = {"all": ["cogitator_memory/records.css"]}

    def visible_rows(self, queryset: QuerySet[Any], grants: Grants) -> QuerySet[Any]:
        # Runs are reached through their threads.
        return queryset.filter(thread__in=Thread.objects.visible_to(grants))

    @admin.display(description=_("created, finished"), ordering="created_at")
    def times(self, obj: JobRun) -> str:
        created = date_format(localtime(obj.created_at), "SHORT_DATETIME_FORMAT")
        if obj.finished_at is None:
            return created
        finished = localtime(obj.finished_at)
        same_day = finished.date() == localtime(obj.created_at).date()
        shown = date_format(finished, "TIME_FORMAT" if same_day else "SHORT_DATETIME_FORMAT")
        return gettext("%(created)s, done %(finished)s") % {"created": created, "finished": shown}


@admin.register(ExtractionRun)
class ExtractionRunAdmin(RunAdmin):
    list_display = (
        "id",
        "thread_link",
        "status",
        "progress",
        "items_written",
        "attempts",
        "times",
        "error",
    )
    # Choices of a choices field: no query for the filter's values.
    list_filter = ("status",)
    # Served by cm_extraction_run_created.
    sortable_by = ("times",)
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

    @admin.display(description=_("windows"))
    def progress(self, obj: ExtractionRun) -> str:
        total = "?" if obj.windows_total is None else str(obj.windows_total)
        return f"{obj.windows_done}/{total}"


@admin.register(CompactionRun)
class CompactionRunAdmin(RunAdmin):
    list_display = (
        "id",
        "thread_link",
        "status",
        "forced",
        "entry_link",
        "attempts",
        "times",
        "error",
    )
    # Choices and a boolean: no query for the filters' values.
    list_filter = ("status", "forced")
    # The model has no index for this order of its own (a thread's runs are found from
    # the thread, cm_compaction_run_thread), so no column sorts the list another way.
    sortable_by = ()
    readonly_fields = (
        "thread",
        "status",
        "forced",
        "entry_link",
        "attempts",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "updated_at",
    )
    fields = readonly_fields

    @admin.display(description=_("compaction entry"))
    def entry_link(self, obj: CompactionRun) -> str:
        if not obj.compaction_entry_id:
            return "—"
        url = reverse(
            "admin:cogitator_memory_entry_change",
            args=[quote(obj.compaction_entry_id)],
            current_app=self.admin_site.name,
        )
        return format_html('<a href="{}">{}</a>', url, obj.compaction_entry_id)
