"""What the model admins of this app share beside ``LargeTableAdmin``: a staff user sees
only the rows their grants reach (``GrantScopedAdmin``); records that services keep are
shown, never added, changed or deleted by hand (``ReadOnlyAdmin``); a record of a thread
links to the thread's page (``ThreadLinkAdmin``).

They are mixins of ``ModelAdmin``, listed before ``LargeTableAdmin`` in a model admin's
bases, and each admin says in a comment why its model is read-only.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.grants import Grants

__all__ = ["GrantScopedAdmin", "ReadOnlyAdmin", "ThreadLinkAdmin"]


class GrantScopedAdmin(admin.ModelAdmin):
    """Rows narrowed to the staff user's grants: list, change page, actions and
    lookups all start from ``get_queryset``."""

    def visible_rows(self, queryset: QuerySet[Any], grants: Grants) -> QuerySet[Any]:
        """The rows of ``queryset`` that ``grants`` reach: the queryset's own
        ``visible_to``; a model without one says how its rows are reached."""
        visible: QuerySet[Any] = cast(Any, queryset).visible_to(grants)
        return visible

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self.visible_rows(super().get_queryset(request), grants_for_user(request.user))


class ReadOnlyAdmin(admin.ModelAdmin):
    """A model shown only: no add, change or delete by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ThreadLinkAdmin(admin.ModelAdmin):
    """A ``thread_link`` column: the row's ``thread_id``, linking to the thread's page."""

    @admin.display(description=_("thread"))
    def thread_link(self, obj: Any) -> str:
        url = reverse(
            "admin:cogitator_memory_thread_change",
            args=[quote(obj.thread_id)],
            current_app=self.admin_site.name,
        )
        return format_html('<a href="{}">{}</a>', url, obj.thread_id)
