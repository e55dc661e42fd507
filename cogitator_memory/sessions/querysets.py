"""Named filters of channel sessions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogitator_memory.grants import GrantedQuerySet

if TYPE_CHECKING:
    from cogitator_memory.sessions.models import ChannelSession  # noqa: F401


class ChannelSessionQuerySet(GrantedQuerySet["ChannelSession"]):
    """A session's agent and user are its thread's (kept in step with it)."""

    def most_recently_active_first(self) -> ChannelSessionQuerySet:
        """Most recently active first; ties broken by id, so paging is stable."""
        return self.order_by("-last_active_at", "-id")
