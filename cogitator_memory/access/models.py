"""Grants: which agents (and users within them) a principal may see.

A principal is a Django user (session or token login) or an API key of a service
(djangorestframework-api-key). Each grant gives one principal one agent id, with all of
its users or only some. A principal without grants sees nothing; a superuser sees all.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class GrantQuerySet(models.QuerySet["Grant"]):
    def for_user(self, user_id: int) -> GrantQuerySet:
        """Grants of one Django user."""
        return self.filter(user_id=user_id)

    def for_api_key(self, api_key_id: str) -> GrantQuerySet:
        """Grants of one API key."""
        return self.filter(api_key_id=api_key_id)


class Grant(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memory_grants",
    )
    api_key = models.ForeignKey(
        # By name, so the app loads without djangorestframework-api-key installed and the
        # system check cogitator_memory.E008 can say what is missing.
        "rest_framework_api_key.APIKey",
        verbose_name=_("API key"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memory_grants",
    )
    agent_id = models.CharField(
        _("agent id"), max_length=255, help_text=_("The agent whose memory the grant opens.")
    )
    user_ids = models.JSONField(
        _("user ids"),
        null=True,
        blank=True,
        help_text=_(
            "Leave empty for every user of the agent; or a list of user ids: then only "
            "threads whose metadata userId is one of them are visible."
        ),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = GrantQuerySet.as_manager()

    class Meta:
        verbose_name = _("memory grant")
        verbose_name_plural = _("memory grants")
        # The grant list's order and agent filter (admin).
        indexes = [models.Index(fields=["agent_id", "id"], name="cm_grant_agent")]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(user__isnull=False, api_key__isnull=True)
                    | models.Q(user__isnull=True, api_key__isnull=False)
                ),
                name="cm_grant_one_principal",
            ),
            models.UniqueConstraint(
                fields=["user", "agent_id"],
                condition=models.Q(user__isnull=False),
                name="cm_grant_user_agent",
                violation_error_message=_("This user already has a grant of this agent."),
            ),
            models.UniqueConstraint(
                fields=["api_key", "agent_id"],
                condition=models.Q(api_key__isnull=False),
                name="cm_grant_key_agent",
                violation_error_message=_("This API key already has a grant of this agent."),
            ),
        ]

    def __str__(self) -> str:
        who = self.user if self.user_id else self.api_key
        return f"{who} -> {self.agent_id}"

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        if bool(self.user_id) == bool(self.api_key_id):
            raise ValidationError(_("A grant names exactly one principal: a user or an API key."))
        if self.user_ids is not None and (
            not isinstance(self.user_ids, list)
            or not all(isinstance(u, str) and u for u in self.user_ids)
        ):
            raise ValidationError({"user_ids": _("A list of user ids (texts), or empty.")})
