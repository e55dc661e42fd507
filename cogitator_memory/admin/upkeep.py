"""Upkeep runs in the admin: read-only, newest first, those of the scopes a staff user's
grants reach, with what each did and its last error; failed and dead runs can be retried
(``RetryJobsAdmin``)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from cogitator_memory.admin.jobs import RetryJobsAdmin
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin
from cogitator_memory.admin.runs import run_times
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.upkeep.records import UpkeepRun

__all__ = ["UpkeepRunAdmin"]


@admin.register(UpkeepRun)
class UpkeepRunAdmin(RetryJobsAdmin, GrantScopedAdmin, ReadOnlyAdmin, LargeTableAdmin):
    list_display = ("id", "work", "agent_id", "user_id", "status", "attempts", "times", "error")
    list_filter = ("status", "work")
    ordering = ("-created_at", "-id")
    sortable_by = ()
    readonly_fields = (
        "work",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
        "status",
        "attempts",
        "report",
        "error",
        "requested_by",
        "created_at",
        "started_at",
        "finished_at",
        "run_after",
        "lease_until",
    )
    fields = readonly_fields

    class Media:
        css = {"all": ["cogitator_memory/records.css"]}

    @admin.display(description=_("created, finished"), ordering="created_at")
    def times(self, obj: UpkeepRun) -> str:
        return run_times(obj)
