"""Grants in the admin: which agents (and users within them) a principal may see.

A superuser grants freely. A staff user holding the grant permissions manages grants only
within their own grants (``Grants.covers``): they see, add, change and delete grants of
the agents granted to them, and under a grant of theirs that names users, grants of those
users only. They never grant themselves, and see their own grants without changing or
deleting them: their access is a superuser's to change, so no staff user widens it.

The API keys themselves are managed on djangorestframework-api-key's own admin page.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.models import Grant
from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.filters import VisibleAgentFilter
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.grants import Grants

__all__ = ["GrantAdmin", "GrantAdminForm", "grants_within"]


def grants_within(queryset: QuerySet[Grant], grants: Grants) -> QuerySet[Grant]:
    """The grants of ``queryset`` that ``grants`` cover (``Grants.covers``). Whether a
    list of users is within another is read in Python (SQLite has no JSON containment),
    for the grants of the agents whose users ``grants`` name only."""
    if grants.agent_ids is None:
        return queryset
    every_user = [agent for agent in grants.agent_ids if grants.user_ids.get(agent) is None]
    named = {
        agent: users
        for agent, users in grants.user_ids.items()
        if users is not None and agent in grants.agent_ids
    }
    covered = [
        pk
        for pk, agent, user_ids in queryset.filter(
            agent_id__in=sorted(named), user_ids__isnull=False
        ).values_list("pk", "agent_id", "user_ids")
        if isinstance(user_ids, list) and grants.covers(agent, user_ids)
    ]
    return queryset.filter(Q(agent_id__in=every_user) | Q(pk__in=covered))


class GrantAdminForm(forms.ModelForm):
    # Set per request by GrantAdmin.get_form: who grants, within which grants (None for a
    # superuser, who grants freely).
    granter: Any = None
    granter_grants: Grants | None = None

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
            self._refuse_beyond_own_grants(user, cleaned)
            self._refuse_second_grant(user, api_key, cleaned.get("agent_id"))
        return cleaned

    def _mark_principal(self, message: str) -> None:
        # Grant.clean states the rule above the form; these say which fields to fix.
        # Marking both also keeps the check constraint on them from adding a message
        # that names only the constraint.
        self.add_error("user", message)
        self.add_error("api_key", message)

    def _refuse_beyond_own_grants(self, user: Any, cleaned: dict[str, Any]) -> None:
        """A staff user grants only within their own grants, and never to themselves."""
        grants = self.granter_grants
        if grants is None or grants.is_unrestricted:
            return
        if user is not None and self.granter is not None and user.pk == self.granter.pk:
            self.add_error(
                "user", gettext("You may not grant yourself; a superuser changes your grants.")
            )
        agent_id = cleaned.get("agent_id")
        if not agent_id or "agent_id" in self.errors or "user_ids" in self.errors:
            return
        if not grants.allows_agent(agent_id):
            self.add_error(
                "agent_id",
                gettext("You may grant only the agents granted to you: %(agents)s.")
                % {"agents": ", ".join(sorted(grants.agent_ids or ())) or gettext("none")},
            )
        elif not grants.covers(agent_id, cleaned.get("user_ids")):
            self.add_error(
                "user_ids",
                gettext("Your grant of %(agent)s names users %(users)s: grant only some of them.")
                % {
                    "agent": agent_id,
                    "users": ", ".join(sorted(grants.user_ids.get(agent_id) or ())),
                },
            )

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
    list_filter = (PrincipalKindFilter, VisibleAgentFilter)
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

    # --- within the staff user's own grants ------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[Grant]:
        """The grants the staff user's own grants cover (all for a superuser): list,
        change and delete pages and bulk actions all start here."""
        return grants_within(super().get_queryset(request), grants_for_user(request.user))

    def _may_manage(self, request: HttpRequest, obj: Grant | None) -> bool:
        """A grant the staff user may change or delete: one their grants cover, and not
        one of their own."""
        if obj is None or request.user.is_superuser:
            return True
        own = obj.user_id is not None and obj.user_id == request.user.pk
        return not own and grants_for_user(request.user).covers(obj.agent_id, obj.user_ids)

    def has_add_permission(self, request: HttpRequest) -> bool:
        grants = grants_for_user(request.user)
        return super().has_add_permission(request) and (
            grants.is_unrestricted or bool(grants.agent_ids)
        )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._may_manage(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self._may_manage(request, obj)

    def get_form(
        self, request: HttpRequest, obj: Grant | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        form = super().get_form(request, obj, change, **kwargs)
        grants = None if request.user.is_superuser else grants_for_user(request.user)
        return type(form.__name__, (form,), {"granter": request.user, "granter_grants": grants})

    # --- the list ----------------------------------------------------------------------

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
