"""The review screen: memory items in the admin.

Suggested items come first (the list opens on them), filterable by agent, status, kind,
trust and when they were recorded. An item's page shows its value, trust, confidence,
scope and valid time, each quote inside its entry's text with the quote marked and a
link to the entry in its thread's tree, and the timeline of its slot. Reviewers activate,
reject (with a reason) and let go, one item on its page or many from the list: each
action is a ``MemoryItems`` call behind its own permission, written to the admin log,
and a list action changes every selected item or none. A reviewer sees only the agents
granted to them; everything a model wrote is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.filters import VisibleAgentFilter
from cogitator_memory.admin.records import GrantScopedAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.exceptions import CogitatorMemoryError
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Evidence, ItemStatus, MemoryItem
from cogitator_memory.items.review import ACTIVATABLE, LETTABLE, REJECTABLE
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import Slot
from cogitator_memory.threads.text import entry_text

__all__ = ["MemoryItemAdmin", "highlighted"]

# The statuses each action takes items from.
MAX_REASON = 1000


def highlighted(text: str, quote_text: str) -> SafeString:
    """``text`` escaped, with the first place ``quote_text`` holds in it (whitespace
    aside) marked."""
    words = quote_text.split()
    found = re.search(r"\s+".join(map(re.escape, words)), text) if words else None
    if found is None:
        return conditional_escape(text)
    return format_html(
        "{}<mark>{}</mark>{}", text[: found.start()], found.group(0), text[found.end() :]
    )


@dataclass(frozen=True)
class QuoteView:
    """What the item page shows of one piece of evidence."""

    evidence: Evidence
    text: SafeString
    thread_url: str | None


class StatusFilter(admin.SimpleListFilter):
    """The review queue first: without a choice the list shows suggested items."""

    title = _("status")
    parameter_name = "status"
    every = "all"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [*ItemStatus.choices, (self.every, _("every status"))]

    def choices(self, changelist: Any) -> Any:
        current = self.value() or ItemStatus.SUGGESTED
        for lookup, title in self.lookup_choices:
            yield {
                "selected": current == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value() or ItemStatus.SUGGESTED
        if value == self.every:
            return queryset
        return queryset.filter(status=value)


@admin.register(MemoryItem)
class MemoryItemAdmin(GrantScopedAdmin, LargeTableAdmin):
    list_display = (
        "short_value",
        "subject_name",
        "attribute",
        "kind",
        "trust",
        "status",
        "confidence",
        "agent_id",
        "user_id",
        "recorded_at",
    )
    list_filter = (VisibleAgentFilter, StatusFilter, "kind", "trust", "recorded_at")
    search_fields = ("value", "attribute", "user_id")
    ordering = ("-recorded_at", "-id")
    # Served by cm_item_status_recorded and cm_item_agent_recorded.
    sortable_by = ("recorded_at",)
    list_select_related = ("subject",)
    actions = ["activate_selected", "reject_selected", "let_go_selected"]
    fieldsets = (
        (
            None,
            {
                "fields": (
                    ("subject", "attribute"),
                    "value",
                    "content",
                    ("kind", "status"),
                    ("trust", "verified", "confidence"),
                )
            },
        ),
        (_("Grants"), {"fields": (("agent_id", "user_id"), ("project_id", "thread_id"))}),
        (
            _("Time"),
            {
                "fields": (
                    ("valid_from", "valid_to", "ends_at"),
                    ("recorded_at", "activated_at", "expired_at"),
                )
            },
        ),
        (
            _("Record"),
            {
                "classes": ("collapse",),
                "fields": (
                    "id",
                    ("times_retrieved", "last_retrieved_at"),
                    "stale_because",
                    "metadata",
                ),
            },
        ),
    )
    readonly_fields = (
        "id",
        "kind",
        "subject",
        "attribute",
        "value",
        "content",
        "trust",
        "verified",
        "confidence",
        "status",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
        "valid_from",
        "valid_to",
        "ends_at",
        "recorded_at",
        "expired_at",
        "activated_at",
        "times_retrieved",
        "last_retrieved_at",
        "stale_because",
        "metadata",
    )

    class Media:
        css = {"all": ["cogitator_memory/review.css"]}

    # --- what a reviewer sees and may do ---------------------------------------------

    # The rows: those the staff user's grants reach (GrantScopedAdmin).

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Items leave memory by review (reject, let go) or with their entries, never by hand.
        return False

    def _may(self, request: HttpRequest, action: str) -> bool:
        return bool(request.user.has_perm(f"cogitator_memory.{action}_memoryitem"))

    def has_activate_permission(self, request: HttpRequest) -> bool:
        return self._may(request, "activate")

    def has_reject_permission(self, request: HttpRequest) -> bool:
        return self._may(request, "reject")

    def has_let_go_permission(self, request: HttpRequest) -> bool:
        return self._may(request, "let_go")

    @admin.display(description=_("value"), ordering="value")
    def short_value(self, obj: MemoryItem) -> str:
        return Truncator(obj.value).chars(80)

    @admin.display(description=_("subject"))
    def subject_name(self, obj: MemoryItem) -> str:
        return obj.subject.name

    # --- the actions ---------------------------------------------------------------------

    def _apply(
        self,
        request: HttpRequest,
        items: Sequence[MemoryItem],
        *,
        allowed: Sequence[str],
        change: Callable[[list[str]], list[str]],
        done: str,
    ) -> bool:
        """Change every item or none: refuse when one is not in ``allowed``."""
        refused = [item for item in items if item.status not in allowed]
        if refused:
            self.message_user(
                request,
                gettext("Nothing was changed: %(items)s cannot take this action (%(statuses)s).")
                % {
                    "items": ", ".join(item.pk for item in refused[:5]),
                    "statuses": ", ".join(sorted({item.status for item in refused})),
                },
                messages.ERROR,
            )
            return False
        ids = [item.pk for item in items]
        try:
            with transaction.atomic():
                changed = change(ids)
                if len(changed) != len(ids):
                    raise CogitatorMemoryError(gettext("The items changed meanwhile; try again."))
        except CogitatorMemoryError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return False
        for item in items:
            self.log_change(request, item, done)
        self.message_user(
            request,
            ngettext("%(count)d item: %(done)s.", "%(count)d items: %(done)s.", len(ids))
            % {"count": len(ids), "done": done},
            messages.SUCCESS,
        )
        return True

    def _review(
        self, request: HttpRequest, chosen: list[MemoryItem], action: str, reason: str = ""
    ) -> None:
        """Run one review action ("activate", "reject", "let_go") on every chosen item or
        none, as the reviewer (their grants narrow the service call too)."""
        items, access = MemoryItems(), grants_for_user(request.user)
        runs: dict[str, tuple[Sequence[str], Callable[[list[str]], list[str]], str]] = {
            "activate": (
                ACTIVATABLE,
                lambda ids: items.activate(ids, grants=access),
                gettext("activated"),
            ),
            "reject": (
                REJECTABLE,
                lambda ids: items.reject(ids, reason, grants=access),
                gettext("rejected: %(reason)s") % {"reason": reason},
            ),
            "let_go": (
                LETTABLE,
                lambda ids: items.let_go(ids, grants=access),
                gettext("let go"),
            ),
        }
        allowed, change, done = runs[action]
        self._apply(request, chosen, allowed=allowed, change=change, done=done)

    def _selected(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem]
    ) -> list[MemoryItem] | None:
        """The selected items, or None (and a message) when some of those selected are not
        in the list the action runs on: all or nothing."""
        items = list(queryset)
        if request.POST.get("select_across") == "1":
            return items
        selected = set(request.POST.getlist(ACTION_CHECKBOX_NAME))
        if selected != {item.pk for item in items}:
            self.message_user(
                request,
                gettext(
                    "Nothing was changed: some selected items are not in this list "
                    "(another status, or not yours to review)."
                ),
                messages.ERROR,
            )
            return None
        return items

    @admin.action(description=_("Activate the selected items"), permissions=["activate"])
    def activate_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        chosen = self._selected(request, queryset)
        if chosen is not None:
            self._review(request, chosen, "activate")

    @admin.action(description=_("Let the selected items go"), permissions=["let_go"])
    def let_go_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        chosen = self._selected(request, queryset)
        if chosen is not None:
            self._review(request, chosen, "let_go")

    @admin.action(description=_("Reject the selected items…"), permissions=["reject"])
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem]
    ) -> HttpResponse | None:
        reason = request.POST.get("reason", "").strip()
        if request.POST.get("confirmed") and reason:
            chosen = self._selected(request, queryset)
            if chosen is not None:
                self._review(request, chosen, "reject", reason[:MAX_REASON])
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Reject memory items"),
            "opts": self.opts,
            "items": list(queryset[:100]),
            "selected": queryset.values_list("pk", flat=True),
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "missing_reason": bool(request.POST.get("confirmed")),
        }
        return TemplateResponse(request, "admin/cogitator_memory/memoryitem/reject.html", context)

    # --- the item's page -----------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path(
                f"<path:object_id>/{action}/",
                view(require_POST(getattr(self, f"{action.replace('-', '_')}_view"))),
                name=f"{self.opts.app_label}_{self.opts.model_name}_{action}",
            )
            for action in ("activate", "reject", "let-go")
        ]
        return own + super().get_urls()

    def _item(self, request: HttpRequest, object_id: str) -> MemoryItem:
        item = self.get_object(request, unquote(object_id))
        if item is None:
            raise Http404(gettext("No memory item with this id."))
        return item

    def _back(self, item: MemoryItem) -> HttpResponseRedirect:
        return HttpResponseRedirect(
            reverse(
                f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
                args=[quote(item.pk)],
                current_app=self.admin_site.name,
            )
        )

    def _item_action(self, request: HttpRequest, object_id: str, action: str) -> HttpResponse:
        """One review action on the item's page: its permission first, then the item."""
        if not self._may(request, action):
            raise PermissionDenied
        item = self._item(request, object_id)
        reason = request.POST.get("reason", "").strip()[:MAX_REASON]
        if action == "reject" and not reason:
            self.message_user(
                request, gettext("Give the reason for the rejection."), messages.ERROR
            )
        else:
            self._review(request, [item], action, reason)
        return self._back(item)

    def activate_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._item_action(request, object_id, "activate")

    def reject_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._item_action(request, object_id, "reject")

    def let_go_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._item_action(request, object_id, "let_go")

    def _quotes(self, item: MemoryItem) -> list[QuoteView]:
        shown = []
        for evidence in item.evidence.select_related("entry").order_by("id"):
            entry = evidence.entry
            if entry is None:
                shown.append(QuoteView(evidence, conditional_escape(evidence.quote), None))
                continue
            url = reverse(
                "admin:cogitator_memory_thread_change",
                args=[quote(entry.thread_id)],
                current_app=self.admin_site.name,
            )
            shown.append(
                QuoteView(
                    evidence,
                    highlighted(entry_text(entry), evidence.quote),
                    f"{url}#entry-{entry.pk}",
                )
            )
        return shown

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        item = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if item is not None:
            history = MemoryItems().history(
                MemoryScope.of(item),
                Slot(item.subject_id, item.attribute),
                grants=grants_for_user(request.user),
            )
            context.update(
                quotes=self._quotes(item),
                history=history,
                may_activate=self.has_activate_permission(request) and item.status in ACTIVATABLE,
                may_reject=self.has_reject_permission(request) and item.status in REJECTABLE,
                may_let_go=self.has_let_go_permission(request) and item.status in LETTABLE,
            )
        return super().change_view(request, object_id, form_url, context)
