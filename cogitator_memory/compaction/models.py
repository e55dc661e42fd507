"""Compaction runs: the job of record of each compaction done in the background."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.items.models import OPEN_RUN_STATUSES, RunStatus

__all__ = ["CompactionRun", "new_compaction_run_id"]


def new_compaction_run_id() -> str:
    return f"cmpr_{uuid.uuid4().hex}"


class CompactionRun(models.Model):
    """One compaction of a thread, asked for through the API (``forced``) or started by
    the thread crossing its threshold. Its id is the Celery task's id; the task keeps its
    status current, so the status does not depend on a Celery result backend. A thread has
    at most one open (queued or running) run: the database keeps it so, which is the lock
    that makes a second trigger do nothing."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_compaction_run_id, editable=False
    )
    thread = models.ForeignKey(
        "cogitator_memory.Thread",
        verbose_name=_("thread"),
        on_delete=models.CASCADE,
        related_name="+",
    )
    status = models.CharField(
        _("status"), max_length=8, choices=RunStatus.choices, default=RunStatus.QUEUED
    )
    forced = models.BooleanField(
        _("forced"),
        default=False,
        help_text=_("Asked for through the API: compacts whatever the thread's size."),
    )
    # The entry id, not a foreign key: the run stays a record when the entry goes.
    compaction_entry_id = models.CharField(
        _("compaction entry"),
        max_length=64,
        blank=True,
        default="",
        help_text=_("The compaction entry the run wrote; empty when there was nothing to do."),
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    error = models.TextField(_("last error"), blank=True, default="")
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("compaction run")
        verbose_name_plural = _("compaction runs")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=[choice.value for choice in RunStatus]),
                name="cm_compaction_run_status_known",
            ),
            models.UniqueConstraint(
                fields=["thread"],
                condition=models.Q(status__in=[status.value for status in OPEN_RUN_STATUSES]),
                name="cm_compaction_run_one_open",
            ),
        ]
        indexes = [
            models.Index(fields=["thread", "-created_at"], name="cm_compaction_run_thread"),
        ]

    def __str__(self) -> str:
        return f"{self.pk} ({self.status})"
