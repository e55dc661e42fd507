"""``ForgetRun``: the job of record of forgetting a user (``MemoryCascade.delete_user`` in
the background).

A run keeps who asked, the user forgotten and the agents, its status and progress (batches
done of the total), and once done the report's counts (``CascadeReport.counts``): how many
threads, entries, items, file versions, vectors ... went, never an id or a text of what
went. The user id stays on the run as the record of the forgetting (the controller's proof
that the erasure asked for was made); nothing the user said does.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from cogitator_memory.grants import USER_ID_MAX_LENGTH
from cogitator_memory.jobs import OPEN_RUN_STATUSES, JobRecord, due_index, status_known

__all__ = ["ForgetRun", "new_forget_run_id"]


def new_forget_run_id() -> str:
    return f"fgt_{uuid.uuid4().hex}"


class ForgetRun(JobRecord):
    """One forgetting of a user asked for by a person (the API or the admin). Its id is
    the Celery task's id; the task keeps status, progress and counts current."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_forget_run_id, editable=False
    )
    user_id = models.CharField(_("user forgotten"), max_length=USER_ID_MAX_LENGTH)
    # The agents the user is forgotten in; null: every agent (grants that reach every
    # agent: a superuser's).
    agent_ids = models.JSONField(_("agents"), null=True, blank=True)
    # Who asked: the run acts with their grants when it runs. A run whose person was
    # deleted fails rather than run with no one's grants.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("asked for by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    done = models.PositiveIntegerField(_("batches done"), default=0)
    total = models.PositiveIntegerField(_("batches"), null=True, blank=True)
    # The report's counts: what went so far while running, all of it once done.
    counts = models.JSONField(_("counts"), null=True, blank=True)

    class Meta:
        verbose_name = _("forget run")
        verbose_name_plural = _("forget runs")
        constraints = [
            status_known("cm_forget_run"),
            # At most one open run per user: a second request for the same agents joins
            # it, one for other agents is refused until it is done.
            models.UniqueConstraint(
                fields=["user_id"],
                condition=models.Q(status__in=[status.value for status in OPEN_RUN_STATUSES]),
                name="cm_forget_run_one_open",
            ),
        ]
        indexes = [
            # The admin's list, newest first; a staff user's own runs.
            models.Index(fields=["-created_at", "-id"], name="cm_forget_run_created"),
            models.Index(fields=["requested_by", "-created_at"], name="cm_forget_run_requester"),
            due_index("cm_forget_run"),
        ]

    def __str__(self) -> str:
        return f"{self.pk} ({self.status})"
