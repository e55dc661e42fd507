"""Extraction, compaction and forget runs in the admin, side by side: read-only, newest
first. Extraction and compaction runs are those of the threads a staff user's grants
reach, with a link to each run's thread (and to the compaction entry a compaction run
wrote); forget runs are those the staff user asked for (a superuser's: all), with their
progress and, once done, what went counted per store, and the "Forget a user" page
(``admin/forgetting.py``). The lists fit a 1400 px window: the ids wrap, and a run's
times share one column."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from cogitator_memory.admin.forgetting import forget_user_url, forget_user_view
from cogitator_memory.admin.jobs import RetryJobsAdmin
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.cascade.actions import ForgetUser
from cogitator_memory.cascade.models import ForgetRun
from cogitator_memory.cascade.report import counted_lines
from cogitator_memory.cascade.runs import forget_runs_of
from cogitator_memory.compaction.models import CompactionRun
from cogitator_memory.grants import Grants
from cogitator_memory.items.models import ExtractionRun
from cogitator_memory.jobs import OPEN_RUN_STATUSES, JobRecord
from cogitator_memory.threads.models import Thread

__all__ = ["CompactionRunAdmin", "ExtractionRunAdmin", "ForgetRunAdmin", "RunAdmin"]


# Read-only: a run is the record of what was asked for; it goes with its thread.
class RunAdmin(RetryJobsAdmin, GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin, LargeTableAdmin):
    """What the run lists share: the runs of visible threads, newest first."""

    ordering = ("-created_at", "-id")

    class Media:
        css = {"all": ["cogitator_memory/records.css"]}

    def visible_rows(self, queryset: QuerySet[Any], grants: Grants) -> QuerySet[Any]:
        # Runs are reached through their threads.
        return queryset.filter(thread__in=Thread.objects.visible_to(grants))

    @admin.display(description=_("created, finished"), ordering="created_at")
    def times(self, obj: JobRecord) -> str:
        return run_times(obj)


def run_times(obj: JobRecord) -> str:
    """When a run was created and, if it finished, when (its time alone on the same day)."""
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
        "run_after",
        "lease_until",
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
        "run_after",
        "lease_until",
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


# Read-only: a forget run is the record of a forgetting asked for; it is made by the
# "Forget a user" page (or the API), and kept.
@admin.register(ForgetRun)
class ForgetRunAdmin(RetryJobsAdmin, ReadOnlyAdmin, LargeTableAdmin):
    list_display = ("id", "user_id", "agents", "status", "progress", "asked_by", "times", "error")
    # Choices of a choices field: no query for the filter's values.
    list_filter = ("status",)
    # Served by cm_forget_run_created.
    sortable_by = ("times",)
    ordering = ("-created_at", "-id")
    list_select_related = ("requested_by",)
    readonly_fields = (
        "id",
        "user_id",
        "agents",
        "requested_by",
        "status",
        "progress",
        "attempts",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "updated_at",
        "run_after",
        "lease_until",
    )
    fields = readonly_fields
    change_form_template = "admin/cogitator_memory/forgetrun/change_form.html"
    change_list_template = "admin/cogitator_memory/forgetrun/change_list.html"

    class Media:
        css = {"all": ["cogitator_memory/records.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[ForgetRun]:
        """The runs the staff user asked for; every run for a superuser."""
        return forget_runs_of(request.user).select_related("requested_by")

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        # Whoever may forget may follow the runs they asked for.
        return super().has_view_permission(request, obj) or ForgetUser.holds_permission(
            request.user
        )

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or ForgetUser.holds_permission(request.user)

    @admin.display(description=_("agents"))
    def agents(self, obj: ForgetRun) -> str:
        return ", ".join(obj.agent_ids) if obj.agent_ids is not None else gettext("every agent")

    @admin.display(description=_("batches"))
    def progress(self, obj: ForgetRun) -> str:
        total = "?" if obj.total is None else str(obj.total)
        return f"{obj.done}/{total}"

    @admin.display(description=_("asked for by"))
    def asked_by(self, obj: ForgetRun) -> str:
        return str(obj.requested_by) if obj.requested_by is not None else "—"

    @admin.display(description=_("created, finished"), ordering="created_at")
    def times(self, obj: ForgetRun) -> str:
        return run_times(obj)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path(
                "forget/",
                view(self.forget_user_view),
                name=f"{self.opts.app_label}_{self.opts.model_name}_forget_user",
            )
        ]
        # Before the admin's own patterns, whose "<path:object_id>/" would match first.
        return own + super().get_urls()

    def forget_user_view(self, request: HttpRequest) -> HttpResponse:
        return forget_user_view(request, self)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, object] | None = None
    ) -> HttpResponse:
        context = {**(extra_context or {}), "forget_user_url": forget_user_url(self, request)}
        return super().changelist_view(request, context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, object] | None = None,
    ) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if run is not None:
            context.update(
                run_open=run.status in OPEN_RUN_STATUSES,
                run_lines=counted_lines(run.counts) if run.counts is not None else None,
            )
        return super().change_view(request, object_id, form_url, context)
