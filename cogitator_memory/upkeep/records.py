"""What the between-runs work keeps of itself: its runs, each scope's pass state, and where
the sleep-time pass has read up to.

- ``UpkeepRun``: a job of record (``jobs.JobRecord``) of upkeep on one scope: refreshing
  its observations, consolidating it (dedupe, then folding lessons into the playbook), or
  both (a sleep-time pass). One queued run per scope and work (requests join it) and one
  running run per scope (a claim of the next waits), held by the database.
- ``UpkeepScopeState``: one row per scope that had a pass: where its dedupe goes on from
  (``dedupe_through``), and when its last pass ran. A pass that stops part of the way goes
  on from here; a scope done is not done again until its items change.
- ``UpkeepCursor``: how far the sleep-time pass has read the items, by the time they were
  recorded and by the time they were activated, so a pass interrupted between two batches
  goes on with the next one.

Runs and states name the scope's user: forgetting the user deletes them
(``cascade/scopes.py``).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.files.models import SHA256_LENGTH
from cogitator_memory.grants import ScopedQuerySet
from cogitator_memory.items.models import ScopeFields
from cogitator_memory.jobs import JobRecord, RunStatus, due_index, status_known

__all__ = [
    "UpkeepCursor",
    "UpkeepRun",
    "UpkeepScopeState",
    "UpkeepWork",
    "new_upkeep_run_id",
]


class UpkeepRunQuerySet(ScopedQuerySet["UpkeepRun"]):
    """Runs, reached through their scope."""


class UpkeepStateQuerySet(ScopedQuerySet["UpkeepScopeState"]):
    """Pass states, reached through their scope."""


def new_upkeep_run_id() -> str:
    return f"upk_{uuid.uuid4().hex}"


class UpkeepWork(models.TextChoices):
    """What a run does on its scope."""

    # A sleep-time pass: observations, then consolidation.
    PASS = "pass", _("sleep-time pass")
    OBSERVATIONS = "observations", _("refresh observations")
    CONSOLIDATION = "consolidation", _("consolidate")


class UpkeepRun(ScopeFields, JobRecord):
    """One piece of upkeep on one scope; ``report`` says what it did (counts and model
    calls, never a text of memory)."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_upkeep_run_id, editable=False
    )
    scope_key = models.CharField(_("scope key"), max_length=SHA256_LENGTH, editable=False)
    work = models.CharField(
        _("work"), max_length=16, choices=UpkeepWork.choices, default=UpkeepWork.PASS
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("asked for by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=_("Empty for a run of the sleep-time pass."),
    )
    report = models.JSONField(_("report"), null=True, blank=True)

    objects = UpkeepRunQuerySet.as_manager()

    class Meta:
        verbose_name = _("upkeep run")
        verbose_name_plural = _("upkeep runs")
        constraints = [
            status_known("cm_upkeep_run"),
            models.CheckConstraint(
                condition=models.Q(work__in=[choice.value for choice in UpkeepWork]),
                name="cm_upkeep_run_work_known",
            ),
            models.UniqueConstraint(
                fields=["scope_key", "work"],
                condition=models.Q(status=RunStatus.QUEUED),
                name="cm_upkeep_run_one_queued",
            ),
            # Two runs of one scope never run at once: a fold and a promotion, or two
            # folds, would each build on a playbook the other is changing.
            models.UniqueConstraint(
                fields=["scope_key"],
                condition=models.Q(status=RunStatus.RUNNING),
                name="cm_upkeep_run_one_running",
            ),
        ]
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="cm_upkeep_run_created"),
            models.Index(fields=["agent_id", "user_id"], name="cm_upkeep_run_owner"),
            models.Index(fields=["scope_key", "status"], name="cm_upkeep_run_scope"),
            due_index("cm_upkeep_run"),
        ]

    def __str__(self) -> str:
        return f"{self.pk} ({self.work}, {self.status})"


class UpkeepScopeState(ScopeFields):
    """Where upkeep of one scope stands."""

    scope_key = models.CharField(
        _("scope key"), max_length=SHA256_LENGTH, unique=True, editable=False
    )
    dedupe_through = models.DateTimeField(
        _("deduplicated through"),
        null=True,
        blank=True,
        help_text=_("The next dedupe looks only at entities with an item recorded after it."),
    )
    last_pass_at = models.DateTimeField(_("last pass at"), null=True, blank=True)
    last_run_id = models.CharField(  # noqa: DJ001
        _("last run"), max_length=64, null=True, blank=True
    )
    passes = models.PositiveIntegerField(_("passes"), default=0)

    objects = UpkeepStateQuerySet.as_manager()

    class Meta:
        verbose_name = _("upkeep scope state")
        verbose_name_plural = _("upkeep scope states")
        indexes = [
            models.Index(fields=["agent_id", "user_id"], name="cm_upkeep_state_owner"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}/{self.user_id or '-'}"


class UpkeepCursor(models.Model):
    """How far the sleep-time pass read the items in the order of one time field."""

    name = models.CharField(_("name"), primary_key=True, max_length=32)
    at = models.DateTimeField(_("at"), null=True, blank=True)
    item_id = models.CharField(_("item id"), max_length=64, blank=True, default="")
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("upkeep cursor")
        verbose_name_plural = _("upkeep cursors")

    def __str__(self) -> str:
        return f"{self.name}: {self.at} {self.item_id}"
