"""Entities in the admin: what memory items are about, each with its observation.

An entity's page shows its observation (what a model made of the facts about it, kept by
memory between runs) and, for each item the observation stands on, a link to the item's
page with its status, so a reviewer can check every statement against what it stands
on. A staff user sees only the entities and items their grants reach; an item they do
not reach is named by its id alone. Entities are written by the items' services: the
page has nothing to save.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.filters import VisibleAgentFilter
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, MemoryItem
from cogitator_memory.upkeep.observation_files import ObservationRecord
from cogitator_memory.upkeep.observations import MemoryObservations

__all__ = ["EntityAdmin"]


@dataclass(frozen=True)
class StoodOn:
    """An item an observation names, as the page shows it: its link and status when the
    staff user may see it."""

    item_id: str
    url: str | None
    status: str | None
    text: str | None


@dataclass(frozen=True)
class StatementView:
    text: str
    items: list[StoodOn]


@admin.register(Entity)
class EntityAdmin(GrantScopedAdmin, ReadOnlyAdmin, LargeTableAdmin):
    # Entities are written with the items about them; a person reviews items, not these.
    change_form_template = "admin/cogitator_memory/entity/change_form.html"
    list_display = ("name", "kind", "agent_id", "user_id", "created_at")
    list_filter = (VisibleAgentFilter,)
    search_fields = ("name", "user_id")
    ordering = ("-created_at", "-id")
    sortable_by = ()
    fields = (
        ("name", "kind"),
        "aliases",
        ("agent_id", "user_id"),
        ("project_id", "thread_id"),
        ("id", "created_at"),
    )
    readonly_fields = (
        "id",
        "name",
        "kind",
        "aliases",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
        "created_at",
    )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        entity = self.get_queryset(request).filter(pk=unquote(object_id)).first()
        context = dict(extra_context or {})
        if entity is not None:
            context["observation"] = self._observation(request, entity)
        return super().change_view(request, object_id, form_url, extra_context=context)

    def _observation(self, request: HttpRequest, entity: Entity) -> dict[str, Any] | None:
        grants = grants_for_user(request.user)
        found: ObservationRecord | None = next(
            (
                record
                for record in MemoryObservations().read(
                    MemoryScope.of(entity), grants=grants, exact=True
                )
                if record.entity_id == entity.pk
            ),
            None,
        )
        if found is None:
            return None
        visible = {
            item.pk: item
            for item in MemoryItem.objects.visible_to(grants).filter(pk__in=list(found.item_ids))
        }

        def stood_on(item_id: str) -> StoodOn:
            item = visible.get(item_id)
            if item is None:
                return StoodOn(item_id, None, None, None)
            url = reverse(
                "admin:cogitator_memory_memoryitem_change",
                args=[quote(item_id)],
                current_app=self.admin_site.name,
            )
            return StoodOn(item_id, url, item.get_status_display(), str(item))

        statements = [
            StatementView(statement.text, [stood_on(i) for i in statement.item_ids])
            for statement in found.statements
        ]
        return {
            "path": found.path,
            "updated_at": found.file.updated_at if found.file else None,
            "statements": statements,
        }
