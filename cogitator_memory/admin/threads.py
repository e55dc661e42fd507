"""Threads and their entries in the admin.

Entries are a record of what was said: the admin shows them and never edits them by
hand, since a hand edit would bypass the tree rules (seq, parents, the active leaf) and
the signals that keep derived memory in step.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from cogitator_memory.threads.models import Entry, Thread


@admin.register(Thread)
class ThreadAdmin(admin.ModelAdmin):
    list_display = ("id", "agent_id", "updated_at", "created_at")
    list_filter = ("agent_id", "updated_at")
    search_fields = ("id", "agent_id", "metadata")
    ordering = ("-updated_at", "-id")
    readonly_fields = ("id", "agent_id", "active_leaf", "next_seq", "created_at", "updated_at")
    fields = ("id", "agent_id", "metadata", "active_leaf", "next_seq", "created_at", "updated_at")
    raw_id_fields = ("active_leaf",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Threads are created by the agents that use them, through the Python API or REST API.
        return False


@admin.register(Entry)
class EntryAdmin(admin.ModelAdmin):
    list_display = ("id", "thread", "seq", "type", "role", "summary", "created_at", "is_redacted")
    list_filter = ("type", "role", "created_at")
    search_fields = ("id", "thread__id")
    list_select_related = ("thread",)
    ordering = ("thread", "-seq")
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Entry]:
        """The list page leaves out tool calls and results, which can be large and are
        only shown on an entry's own page."""
        return super().get_queryset(request).defer("tool_calls", "tool_results", "event")

    def get_readonly_fields(self, request: HttpRequest, obj: Entry | None = None) -> Any:
        return [field.name for field in Entry._meta.concrete_fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Entry | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Entry | None = None) -> bool:
        # Deleting goes through delete_entry, which splices the entry out of its branch.
        return False

    @admin.display(description=_("content"))
    def summary(self, obj: Entry) -> str:
        content = obj.content
        if isinstance(content, list):
            content = " ".join(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
        return Truncator(str(content or "")).chars(80)

    @admin.display(boolean=True, description=_("redacted"))
    def is_redacted(self, obj: Entry) -> bool:
        return obj.redaction is not None
