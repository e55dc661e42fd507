"""Named filters of channel sessions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models

from cogitator_memory.scope import Scope, scope_condition

if TYPE_CHECKING:
    from cogitator_memory.sessions.models import ChannelSession  # noqa: F401


class ChannelSessionQuerySet(models.QuerySet["ChannelSession"]):
    def visible_to(self, scope: Scope) -> ChannelSessionQuerySet:
        """Sessions the caller of ``scope`` may see: the one scope rule on the session's
        agent and user, which are its thread's."""
        condition = scope_condition(scope, agent_field="agent_id", user_field="user_id")
        return self.none() if condition is None else self.filter(condition)

    def most_recently_active_first(self) -> ChannelSessionQuerySet:
        """Most recently active first; ties broken by id, so paging is stable."""
        return self.order_by("-last_active_at", "-id")
