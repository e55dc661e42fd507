"""Grants in the admin: which agents (and users within them) a principal may see.

The API keys themselves are managed on djangorestframework-api-key's own admin page.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.models import Grant
from cogitator_memory.admin.filters import AgentFilter
from cogitator_memory.admin.scale import LargeTableAdmin


class GrantAdminForm(forms.ModelForm):
    class Meta:
        model = Grant
        fields = ("user", "api_key", "agent_id", "user_ids")

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        # A field that failed on its own (an unknown id) has said what is wrong already.
        if "user" in self.errors or "api_key" in self.errors:
            return cleaned
        user, api_key = cleaned.get("user"), cleaned.get("api_key")
        if user is not None and api_key is not None:
            self._mark_principal(gettext("Clear the user or the API key."))
        elif user is None and api_key is None:
            self._mark_principal(gettext("Choose a user or an API key."))
        else:
            self._refuse_second_grant(user, api_key, cleaned.get("agent_id"))
        return cleaned

    def _mark_principal(self, message: str) -> None:
        # Grant.clean states the rule above the form; these say which fields to fix.
        # Marking both also keeps the check constraint on them from adding a message
        # that names only the constraint.
        self.add_error("user", message)
        self.add_error("api_key", message)

    def _refuse_second_grant(self, user: Any, api_key: Any, agent_id: str | None) -> None:
        # The database constraints on (principal, agent) are conditional, and Django
        # reports those only by constraint name.
        if not agent_id:
            return
        principal = {"user": user} if user is not None else {"api_key": api_key}
        others = Grant.objects.filter(agent_id=agent_id, **principal)
        if self.instance.pk is not None:
            others = others.exclude(pk=self.instance.pk)
        if others.exists():
            self.add_error(
                "agent_id",
                gettext("%(principal)s already has a grant of agent %(agent)s.")
                % {"principal": user if user is not None else api_key, "agent": agent_id},
            )


class PrincipalKindFilter(admin.SimpleListFilter):
    title = _("principal")
    parameter_name = "principal"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("user", _("users")), ("api_key", _("API keys"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Grant]) -> QuerySet[Grant]:
        if self.value() == "user":
            return queryset.filter(user__isnull=False)
        if self.value() == "api_key":
            return queryset.filter(api_key__isnull=False)
        return queryset


@admin.register(Grant)
class GrantAdmin(LargeTableAdmin):
    form = GrantAdminForm
    list_display = ("principal", "agent_id", "users", "created_at")
    list_filter = (PrincipalKindFilter, AgentFilter)
    list_select_related = ("user", "api_key")
    search_fields = (
        "agent_id",
        "user__username",
        "user__email",
        "api_key__name",
        "api_key__prefix",
    )
    ordering = ("agent_id", "id")
    # The column an index sorts (cm_grant_agent).
    sortable_by = ("agent_id",)
    autocomplete_fields = ("user", "api_key")
    fieldsets = (
        (_("Principal"), {"fields": ("user", "api_key")}),
        (_("What it may see"), {"fields": ("agent_id", "user_ids")}),
    )

    @admin.display(description=_("principal"))
    def principal(self, obj: Grant) -> str:
        if obj.user_id is not None:
            return f"{_('user')}: {obj.user}"
        return f"{_('API key')}: {obj.api_key}"

    @admin.display(description=_("users"))
    def users(self, obj: Grant) -> str:
        if obj.user_ids is None:
            return str(_("all users"))
        return ", ".join(str(user_id) for user_id in obj.user_ids) or str(_("no user"))
