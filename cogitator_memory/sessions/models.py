"""Channel sessions: one conversation of a user with an agent on a channel, and its thread."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from cogitator_memory.grants import USER_ID_MAX_LENGTH
from cogitator_memory.sessions.querysets import ChannelSessionQuerySet

SESSION_ID_PREFIX = "sess_"
KEY_MAX_LENGTH = 255


def new_session_id() -> str:
    return f"{SESSION_ID_PREFIX}{uuid.uuid4().hex}"


class SessionStatus(models.TextChoices):
    ACTIVE = "active", _("active")
    CLOSED = "closed", _("closed")


class ChannelSession(models.Model):
    """The thread of one (user, channel type, channel id, agent): a unique constraint
    keeps it to one, so racing callers of ``SessionManager.get_or_create`` share it."""

    id = models.CharField(
        _("id"), primary_key=True, max_length=64, default=new_session_id, editable=False
    )
    user_id = models.CharField(_("user id"), max_length=USER_ID_MAX_LENGTH)
    channel_type = models.CharField(
        _("channel type"), max_length=KEY_MAX_LENGTH, help_text=_("telegram, slack, web, ...")
    )
    channel_id = models.CharField(_("channel id"), max_length=KEY_MAX_LENGTH)
    agent_id = models.CharField(_("agent id"), max_length=KEY_MAX_LENGTH)
    thread = models.OneToOneField(
        "cogitator_memory.Thread",
        verbose_name=_("thread"),
        on_delete=models.CASCADE,
        related_name="channel_session",
        help_text=_("The thread the session's conversation is kept in."),
    )
    status = models.CharField(
        _("status"), max_length=16, choices=SessionStatus.choices, default=SessionStatus.ACTIVE
    )
    last_active_at = models.DateTimeField(_("last active at"), default=timezone.now)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    objects = ChannelSessionQuerySet.as_manager()

    class Meta:
        verbose_name = _("channel session")
        verbose_name_plural = _("channel sessions")
        constraints = [
            # Agent first: the index also serves the agent filter of the admin.
            models.UniqueConstraint(
                fields=["agent_id", "channel_type", "channel_id", "user_id"],
                name="cm_session_key_unique",
                violation_error_message=_(
                    "A session of this user, channel and agent already exists."
                ),
            ),
        ]
        indexes = [
            models.Index(fields=["-last_active_at", "-id"], name="cm_session_active"),
            models.Index(
                fields=["status", "-last_active_at", "-id"], name="cm_session_status_active"
            ),
            models.Index(fields=["user_id", "-last_active_at", "-id"], name="cm_session_user"),
            models.Index(
                fields=["user_id", "status", "-last_active_at", "-id"],
                name="cm_session_user_status",
            ),
            models.Index(
                fields=["agent_id", "-last_active_at", "-id"], name="cm_session_agent_active"
            ),
            models.Index(
                fields=["channel_type", "-last_active_at", "-id"], name="cm_session_channel"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} · {self.channel_type}:{self.channel_id} · {self.user_id}"
