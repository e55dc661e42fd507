"""Channel sessions in the admin: read-only, the sessions a staff user's grants reach (their
agent and user, as their threads), the most recently active first, each linking its
thread."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.filters import IndexedValuesFilter, VisibleAgentFilter
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.sessions.models import ChannelSession


class ChannelTypeFilter(IndexedValuesFilter):
    """Channel types: for a superuser the first ones of the table (an index lookup each);
    for a staff user limited by grants a text box only, so that the channel types of
    agents they are not granted are not listed."""

    title = _("channel type")
    parameter_name = "channel_type"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        if grants_for_user(request.user).is_unrestricted:
            return super().lookups(request, model_admin)
        self.more_values = True
        return []


# Read-only: a session goes with its thread.
@admin.register(ChannelSession)
class ChannelSessionAdmin(GrantScopedAdmin, ReadOnlyAdmin, ThreadLinkAdmin, LargeTableAdmin):
    list_display = (
        "id",
        "agent_id",
        "user_id",
        "channel_type",
        "channel_id",
        "status",
        "thread_link",
        "last_active_at",
        "created_at",
    )
    # Agent and channel type lead indexes; status is a choices field (no query).
    list_filter = (VisibleAgentFilter, ChannelTypeFilter, "status")
    ordering = ("-last_active_at", "-id")
    sortable_by = ("last_active_at",)
    readonly_fields = (
        "id",
        "agent_id",
        "user_id",
        "channel_type",
        "channel_id",
        "thread",
        "status",
        "last_active_at",
        "created_at",
    )
