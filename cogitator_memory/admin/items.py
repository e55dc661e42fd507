"""The review screen: memory items in the admin.

Suggested items come first (the list opens on them), filterable by agent, status (and
"rejected"), kind, trust and when they were recorded; each row shows its quotes, who said
them and when. An item's page shows its value, trust, confidence, scope and valid time,
why it is stale (a rejection's reason as text), each quote inside its entry's text with
the quote marked and a link to the entry in its thread's tree, and the timeline of its
slot. Reviewers activate, reject (with a reason) and let go, one item on its page or many
from the list: each decision is an action of ``items.review`` (its permission, the
statuses it takes, the change of every chosen item or none, the admin log), run here by
``ReviewAdmin``. A reviewer sees only the agents granted to them; everything a model
wrote is escaped. Items are changed by review only: the page has nothing to save.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote, unquote
from django.contrib.contenttypes.models import ContentType
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import conditional_escape, format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.filters import VisibleAgentFilter
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin
from cogitator_memory.admin.review import ReviewAdmin, error_text
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Evidence, ItemStatus, MemoryItem
from cogitator_memory.items.querysets import REJECTED
from cogitator_memory.items.review import ActivateItems, ItemReview, LetGoItems, RejectItems
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import Slot
from cogitator_memory.threads.text import entry_text

__all__ = ["MemoryItemAdmin", "highlighted"]

# The decisions of an item's page, in the order of its buttons, each with its label and
# the last segment of its URL.
DECISIONS: tuple[tuple[type[ItemReview], Any, str], ...] = (
    (ActivateItems, _("Activate"), "activate"),
    (RejectItems, _("Reject"), "reject"),
    (LetGoItems, _("Let go"), "let-go"),
)
# Quotes a row of the list shows (the item's page shows all), and the characters of each.
QUOTES_LISTED = 3
QUOTE_CHARS = 140


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


def said_by(evidence: Evidence) -> str:
    """Who said the quoted entry: its name with its role ("Ana (user)"), or its role."""
    entry = evidence.entry
    if entry is None:
        return gettext("the entry is gone")
    role = entry.get_role_display() if entry.role else entry.get_type_display()
    return f"{entry.name} ({role})" if entry.name else str(role)


@dataclass(frozen=True)
class QuoteView:
    """What the item's page shows of one piece of evidence."""

    evidence: Evidence
    text: SafeString
    thread_url: str | None
    said_by: str


def quoted_entry_url(evidence: Evidence, *, admin_site: str) -> str | None:
    """The thread page of the quoted entry, with the entry marked (``highlight``) and
    scrolled to (its anchor); None when the entry is gone."""
    entry = evidence.entry
    if entry is None:
        return None
    url = reverse(
        "admin:cogitator_memory_thread_change",
        args=[quote(entry.thread_id)],
        current_app=admin_site,
    )
    return f"{url}?{urlencode({'highlight': entry.pk})}#entry-{entry.pk}"


class StatusFilter(admin.SimpleListFilter):
    """The review queue first: without a choice the list shows suggested items.
    "Rejected" are the stale items a reviewer rejected."""

    title = _("status")
    parameter_name = "status"
    every = "all"
    rejected = REJECTED

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            *ItemStatus.choices,
            (self.rejected, _("rejected")),
            (self.every, _("every status")),
        ]

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
        if value == self.rejected:
            return queryset.rejected()  # type: ignore[attr-defined]
        return queryset.filter(status=value)


# Read-only by hand: items change by review (the actions below), never by editing.
@admin.register(MemoryItem)
class MemoryItemAdmin(ReviewAdmin, GrantScopedAdmin, ReadOnlyAdmin, LargeTableAdmin):
    # Few, wrapping columns: the list fits a 1400 px window beside the navigation and the
    # filters.
    list_display = ("item", "quotes", "kind_trust_confidence", "status", "recorded_at")
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
                    "why_stale",
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
        "why_stale",
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

    # --- what a reviewer sees ------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryItem]:
        """The items the staff user's grants reach (``GrantScopedAdmin``), with their
        quotes and who said them: the quoted entries' role, name and time, not their
        content, which can be large."""
        evidence = (
            Evidence.objects.select_related("entry")
            .only(
                "id",
                "item_id",
                "quote",
                "verified",
                "entry__id",
                "entry__thread_id",
                "entry__type",
                "entry__role",
                "entry__name",
                "entry__created_at",
            )
            .order_by("id")
        )
        queryset: QuerySet[MemoryItem] = super().get_queryset(request)
        return queryset.prefetch_related(Prefetch("evidence", queryset=evidence))

    @admin.display(description=_("item"))
    def item(self, obj: MemoryItem) -> SafeString:
        whose = f"{obj.agent_id} / {obj.user_id}" if obj.user_id else obj.agent_id
        return format_html(
            '<span class="cm-item-cell__value">{}</span>'
            '<span class="cm-item-cell__slot">{} · {}</span>'
            '<span class="cm-item-cell__whose">{}</span>',
            Truncator(obj.value).chars(80),
            obj.subject.name,
            obj.attribute,
            whose,
        )

    @admin.display(description=_("kind, trust"))
    def kind_trust_confidence(self, obj: MemoryItem) -> str:
        return f"{obj.get_kind_display()} · {obj.get_trust_display()} · {obj.confidence:.2f}"

    @admin.display(description=_("quotes"))
    def quotes(self, obj: MemoryItem) -> SafeString:
        shown = list(obj.evidence.all())
        if not shown:
            return format_html('<span class="cm-quote-cell__none">{}</span>', gettext("none"))
        rows = format_html_join(
            "",
            '<li class="cm-quote-cell{}"><q>{}</q>{} <span class="cm-quote-cell__who">'
            "— {}{}</span></li>",
            (
                (
                    "" if evidence.verified else " cm-quote-cell--fails",
                    Truncator(" ".join(evidence.quote.split())).chars(QUOTE_CHARS),
                    ""
                    if evidence.verified
                    else format_html(
                        ' <span class="cm-quote-cell__verdict">{}</span>',
                        gettext("(not in its entry)"),
                    ),
                    said_by(evidence),
                    ""
                    if evidence.entry is None
                    else f", {localtime(evidence.entry.created_at):%Y-%m-%d %H:%M}",
                )
                for evidence in shown[:QUOTES_LISTED]
            ),
        )
        more = len(shown) - QUOTES_LISTED
        if more > 0:
            rows += format_html(
                '<li class="cm-quote-cell__more">{}</li>',
                gettext("and %(count)d more") % {"count": more},
            )
        return format_html('<ul class="cm-quote-cells">{}</ul>', rows)

    def get_fieldsets(self, request: HttpRequest, obj: MemoryItem | None = None) -> Any:
        """The fieldsets; "why stale" only on the page of a stale item."""
        fieldsets: Any = super().get_fieldsets(request, obj)
        if obj is not None and obj.status == ItemStatus.STALE:
            return fieldsets
        return [
            (name, {**options, "fields": [f for f in options["fields"] if f != "why_stale"]})
            for name, options in fieldsets
        ]

    @admin.display(description=_("why stale"))
    def why_stale(self, obj: MemoryItem) -> str:
        """A stale item's reason as text: a rejection's reason, with who rejected it and
        when (from the admin log); any other reason as its words."""
        because = obj.stale_because if isinstance(obj.stale_because, dict) else None
        if obj.status != ItemStatus.STALE or because is None:
            return "—"
        note = str(because.get("note") or "").strip()
        if because.get("reason") == REJECTED:
            rejection = (
                LogEntry.objects.filter(
                    content_type=ContentType.objects.get_for_model(MemoryItem),
                    object_id=obj.pk,
                    change_message__startswith=RejectItems.done,
                )
                .select_related("user")
                .order_by("-action_time", "-id")
                .first()
            )
            if rejection is None:
                return gettext("Rejected: %(note)s") % {"note": note}
            return gettext("Rejected by %(user)s on %(at)s: %(note)s") % {
                "user": rejection.user,
                "at": f"{localtime(rejection.action_time):%Y-%m-%d %H:%M}",
                "note": note,
            }
        reason = str(because.get("reason") or gettext("no reason given")).replace("_", " ")
        return f"{reason}: {note}" if note else reason

    # --- the decisions ---------------------------------------------------------------------

    def has_activate_permission(self, request: HttpRequest) -> bool:
        return self.may_decide(request, ActivateItems)

    def has_reject_permission(self, request: HttpRequest) -> bool:
        return self.may_decide(request, RejectItems)

    def has_let_go_permission(self, request: HttpRequest) -> bool:
        return self.may_decide(request, LetGoItems)

    @admin.action(description=_("Activate the selected items"), permissions=["activate"])
    def activate_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        self.decide(request, ActivateItems, self.chosen_ids(request, queryset))

    @admin.action(description=_("Let the selected items go"), permissions=["let_go"])
    def let_go_selected(self, request: HttpRequest, queryset: QuerySet[MemoryItem]) -> None:
        self.decide(request, LetGoItems, self.chosen_ids(request, queryset))

    @admin.action(description=_("Reject the selected items…"), permissions=["reject"])
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem]
    ) -> HttpResponse | None:
        """A page asking for the reason first; once posted with it, the decision."""
        ids, reason = self.chosen_ids(request, queryset), request.POST.get("reason", "")
        select_across = request.POST.get("select_across") == "1"
        problem = None
        if request.POST.get("confirmed"):
            try:
                RejectItems.clean_reason(reason)
            except InvalidInput as exc:
                problem = error_text(exc)
            else:
                self.decide(request, RejectItems, ids, reason)
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Reject memory items"),
            "opts": self.opts,
            "items": list(queryset[:100]),
            # With "select all" the list's own filter (in the URL posted to) names them.
            "selected": [] if select_across else ids,
            "select_across": select_across,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "problem": problem,
            "max_reason": RejectItems.max_reason,
        }
        return TemplateResponse(request, "admin/cogitator_memory/memoryitem/reject.html", context)

    # --- the item's page -----------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path(
                f"<path:object_id>/{segment}/",
                view(require_POST(self._decision_view(decision))),
                name=f"{self.opts.app_label}_{self.opts.model_name}_{segment}",
            )
            for decision, _label, segment in DECISIONS
        ]
        return own + super().get_urls()

    def _decision_view(self, decision: type[ItemReview]) -> Callable[..., HttpResponse]:
        def view(request: HttpRequest, object_id: str) -> HttpResponse:
            return self.decision_view(request, object_id, decision)

        return view

    def _quotes(self, item: MemoryItem) -> list[QuoteView]:
        shown = []
        for evidence in item.evidence.select_related("entry").order_by("id"):
            url = quoted_entry_url(evidence, admin_site=self.admin_site.name)
            entry = evidence.entry
            text = (
                conditional_escape(evidence.quote)
                if entry is None
                else highlighted(entry_text(entry), evidence.quote)
            )
            shown.append(QuoteView(evidence, text, url, said_by(evidence)))
        return shown

    def _decisions(self, request: HttpRequest, item: MemoryItem) -> list[dict[str, Any]]:
        """The decisions the reviewer may make on the item now, for its buttons."""
        grants = grants_for_user(request.user)
        return [
            {
                "name": segment,
                "label": label,
                "takes_reason": decision.takes_reason,
                "max_reason": decision.max_reason,
                "url": reverse(
                    f"admin:{self.opts.app_label}_{self.opts.model_name}_{segment}",
                    args=[quote(item.pk)],
                    current_app=self.admin_site.name,
                ),
            }
            for decision, label, segment in DECISIONS
            if self.review(request, decision, grants=grants).allowed_on(item)
        ]

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
                decisions=self._decisions(request, item),
            )
        return super().change_view(request, object_id, form_url, context)
