"""Compaction runs: the job of record of each compaction done in the background."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils.translation import gettext_lazy as _

from cogitator_memory.jobs import JobRun, due_index, run_constraints

__all__ = ["CompactionRun", "new_compaction_run_id"]


def new_compaction_run_id() -> str:
    return f"cmpr_{uuid.uuid4().hex}"


class CompactionRun(JobRun):
    """One compaction of a thread, asked for through the API (``forced``) or started by
    the thread crossing its threshold. Its id is the Celery task's id; the task keeps its
    status current, so the status does not depend on a Celery result backend. A thread has
    at most one open (queued or running) run: the database keeps it so, which is the lock
    that makes a second trigger do nothing."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_compaction_run_id, editable=False
    )
    forced = models.BooleanField(
        _("forced"),
        default=False,
        help_text=_("Asked for through the API: compacts whatever the thread's size."),
    )
    # The entry id, not a foreign key: the run stays a record when the entry goes (and
    # the id is emptied then: ``jobs.RunsOnEntries``).
    compaction_entry_id = models.CharField(
        _("compaction entry"),
        max_length=64,
        blank=True,
        default="",
        help_text=_("The compaction entry the run wrote; empty when there was nothing to do."),
    )

    class Meta:
        verbose_name = _("compaction run")
        verbose_name_plural = _("compaction runs")
        constraints = run_constraints("cm_compaction_run")
        indexes = [
            models.Index(fields=["thread", "-created_at"], name="cm_compaction_run_thread"),
            due_index("cm_compaction_run"),
        ]
