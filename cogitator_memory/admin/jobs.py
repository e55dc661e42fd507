"""What the admin lists of jobs of record share: the dead state, and a retry action.

A job tried ``JOBS["MAX_ATTEMPTS"]`` times is dead; the lists filter by status, show the
last error, and offer "Retry" for failed and dead jobs to whoever may change them (the
model's change permission): the jobs go back to the queue with their attempts reset and
are published once the change commits (``jobs.retry_jobs``), and the admin's log records
who retried what. The pending vectors of the message index are listed here too.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from cogitator_memory.admin.records import ReadOnlyAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.embeddings.models import PendingVector
from cogitator_memory.jobs import RETRYABLE_STATUSES, retry_jobs

__all__ = ["PendingVectorAdmin", "RetryJobsAdmin"]


class RetryJobsAdmin(admin.ModelAdmin):
    """Adds the "Retry" action for failed and dead jobs."""

    actions = ["retry_jobs_action"]

    def has_retry_permission(self, request: HttpRequest) -> bool:
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")

    @admin.action(permissions=["retry"], description=_("Retry the selected failed or dead jobs"))
    def retry_jobs_action(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        chosen = list(queryset.filter(status__in=RETRYABLE_STATUSES))
        retried = retry_jobs(self.model, [job.pk for job in chosen])
        for job in chosen:
            self.log_change(request, job, [{"changed": {"fields": ["status"]}}])
        skipped = queryset.count() - len(chosen)
        self.message_user(
            request,
            ngettext("%(count)d job queued again.", "%(count)d jobs queued again.", retried)
            % {"count": retried},
            messages.SUCCESS if retried else messages.WARNING,
        )
        if skipped:
            self.message_user(
                request,
                ngettext(
                    "%(count)d job was not failed or dead, and was left as it is.",
                    "%(count)d jobs were not failed or dead, and were left as they are.",
                    skipped,
                )
                % {"count": skipped},
                messages.WARNING,
            )


@admin.register(PendingVector)
class PendingVectorAdmin(RetryJobsAdmin, ReadOnlyAdmin, LargeTableAdmin):
    list_display = ("entry_id", "status", "attempts", "run_after", "lease_until", "error")
    list_filter = ("status",)
    ordering = ("run_after",)
    sortable_by = ()
    readonly_fields = (
        "entry",
        "status",
        "attempts",
        "error",
        "created_at",
        "started_at",
        "run_after",
        "lease_until",
        "published_at",
    )
    fields = readonly_fields
