"""Work on stores outside the database, recorded in the transaction that makes it due."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class OutboxMessage(models.Model):
    """One change a store outside the database still has to make (delete the vectors of
    entries that went, update the owner copied into them). Written in the transaction of
    the change it follows, published after commit, retried with backoff until it is done,
    then deleted."""

    topic = models.CharField(_("topic"), max_length=64, help_text=_("What to do."))
    payload = models.JSONField(_("payload"), help_text=_("What to do it with."))
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(
        _("next attempt at"),
        default=timezone.now,
        help_text=_("Not tried again before this moment (backoff, or a publisher's lease)."),
    )
    last_error = models.TextField(_("last error"), blank=True, default="")

    class Meta:
        verbose_name = _("outbox message")
        verbose_name_plural = _("outbox messages")
        indexes = [
            models.Index(fields=["next_attempt_at", "id"], name="cm_outbox_due"),
            # The admin's topic filter, on a backlog of any size.
            models.Index(fields=["topic", "id"], name="cm_outbox_topic"),
        ]

    def __str__(self) -> str:
        return f"{self.topic} #{self.pk}"
