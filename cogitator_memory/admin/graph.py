"""The knowledge graph in the admin: nodes and edges, reviewed and merged.

The node list shows each node's name, type, status, scope and how many quotes it stands
on, within the staff user's grants, searchable by name and alias. A node's page shows its
quotes inside their entries and its neighbourhood: each edge with its relation, the node
at its other end (linked), its status and its quotes. Reviewers activate and reject
through the actions of ``graph.review`` (on the page or for many from the list), and
"Merge…" asks which node to keep, shows what moves into it (names, quotes, edges), and
runs ``MemoryGraph.merge_nodes``. Edges have their own list and page. Rows change by
review and merging only: the pages have nothing to save.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.filters import VisibleAgentFilter
from cogitator_memory.admin.items import QuoteView, highlighted, quoted_entry_url, said_by
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin
from cogitator_memory.admin.review import ReviewAdmin, error_text
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.exceptions import CogitatorMemoryError, InvalidInput
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.graph.naming import nodes_named
from cogitator_memory.graph.review import (
    ActivateGraphEdges,
    ActivateGraphNodes,
    GraphEdgeReview,
    GraphNodeReview,
    RejectGraphEdges,
    RejectGraphNodes,
)
from cogitator_memory.graph.services import MemoryGraph
from cogitator_memory.threads.text import entry_text

__all__ = ["GraphEdgeAdmin", "GraphNodeAdmin"]

# The rows a confirmation page lists (a merge or a rejection), at most.
LISTED = 100


def scope_text(row: GraphNode | GraphEdge) -> str:
    """The row's exact scope: its agent and, where set, its user, project and thread."""
    return " / ".join(
        str(part) for part in (row.agent_id, row.user_id, row.project_id, row.thread_id) if part
    )


def quotes_of(rows: QuerySet[GraphEvidence], *, admin_site: str) -> list[QuoteView]:
    """Each quote inside its entry's text, marked, with the link to the entry."""
    shown = []
    for evidence in rows.select_related("entry").order_by("id"):
        entry = evidence.entry
        text = highlighted(entry_text(entry), evidence.quote) if entry else evidence.quote
        url = quoted_entry_url(evidence, admin_site=admin_site)  # type: ignore[arg-type]
        shown.append(QuoteView(evidence, text, url, said_by(evidence)))  # type: ignore[arg-type]
    return shown


@dataclass(frozen=True)
class EdgeView:
    """An edge as a node's page shows it: from the node's side."""

    edge: GraphEdge
    outgoing: bool
    other: GraphNode
    other_url: str
    edge_url: str
    quotes: list[QuoteView]


@dataclass(frozen=True)
class MergeView:
    """What one node brings into the node kept."""

    node: GraphNode
    names: list[str]
    quotes: list[str]
    edges: list[str]


class GraphReviewAdmin(ReviewAdmin, GrantScopedAdmin, ReadOnlyAdmin, LargeTableAdmin):
    """What the node and edge admins share: review buttons and list actions, the quotes
    of the page, the reason page of a rejection."""

    change_form_template = "admin/cogitator_memory/graph_change_form.html"
    activate: type[GraphNodeReview] | type[GraphEdgeReview]
    reject: type[GraphNodeReview] | type[GraphEdgeReview]

    class Media:
        css = {"all": ["cogitator_memory/review.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset: QuerySet[Any] = super().get_queryset(request)
        return queryset.annotate(evidence_total=Count("evidence"))

    @admin.display(description=_("scope"))
    def scope(self, obj: GraphNode | GraphEdge) -> str:
        return scope_text(obj)

    @admin.display(description=_("quotes"))
    def evidence_count(self, obj: Any) -> int:
        return int(obj.evidence_total)

    def decisions(self) -> tuple[tuple[Any, Any, str], ...]:
        return ((self.activate, _("Activate"), "activate"), (self.reject, _("Reject"), "reject"))

    # --- the decisions ---------------------------------------------------------------------

    def has_activate_permission(self, request: HttpRequest) -> bool:
        return self.may_decide(request, self.activate)

    def has_reject_permission(self, request: HttpRequest) -> bool:
        return self.may_decide(request, self.reject)

    @admin.action(description=_("Activate the selected rows"), permissions=["activate"])
    def activate_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self.decide(request, self.activate, self.chosen_ids(request, queryset))

    @admin.action(description=_("Reject the selected rows…"), permissions=["reject"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        """A page asking for the reason first; once posted with it, the decision."""
        ids, reason = self.chosen_ids(request, queryset), request.POST.get("reason", "")
        select_across = request.POST.get("select_across") == "1"
        problem = None
        if request.POST.get("confirmed"):
            try:
                self.reject.clean_reason(reason)
            except InvalidInput as exc:
                problem = error_text(exc)
            else:
                self.decide(request, self.reject, ids, reason)
                return None
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Reject %(rows)s") % {"rows": self.opts.verbose_name_plural},
            "opts": self.opts,
            "rows": list(queryset[:LISTED]),
            "selected": [] if select_across else ids,
            "select_across": select_across,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            "problem": problem,
            "max_reason": self.reject.max_reason,
        }
        return TemplateResponse(request, "admin/cogitator_memory/graph_reject.html", context)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path(
                f"<path:object_id>/{segment}/",
                view(require_POST(self._decision_view(decision))),
                name=f"{self.opts.app_label}_{self.opts.model_name}_{segment}",
            )
            for decision, _label, segment in self.decisions()
        ]
        return own + super().get_urls()

    def _decision_view(self, decision: Any) -> Callable[..., HttpResponse]:
        def view(request: HttpRequest, object_id: str) -> HttpResponse:
            return self.decision_view(request, object_id, decision)

        return view

    def page_decisions(self, request: HttpRequest, row: Any) -> list[dict[str, Any]]:
        """The decisions the reviewer may make on the row now, for its buttons."""
        grants = grants_for_user(request.user)
        return [
            {
                "name": segment,
                "label": label,
                "takes_reason": decision.takes_reason,
                "max_reason": decision.max_reason,
                "url": reverse(
                    f"admin:{self.opts.app_label}_{self.opts.model_name}_{segment}",
                    args=[quote(row.pk)],
                    current_app=self.admin_site.name,
                ),
            }
            for decision, label, segment in self.decisions()
            if self.review(request, decision, grants=grants).allowed_on(row)
        ]

    def row_url(self, row: GraphNode | GraphEdge) -> str:
        opts = row._meta
        return reverse(
            f"admin:{opts.app_label}_{opts.model_name}_change",
            args=[quote(row.pk)],
            current_app=self.admin_site.name,
        )

    def page_context(self, request: HttpRequest, row: Any) -> dict[str, Any]:
        return {
            "quotes": quotes_of(row.evidence.all(), admin_site=self.admin_site.name),
            "decisions": self.page_decisions(request, row),
        }

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        row = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if row is not None:
            context.update(self.page_context(request, row))
        return super().change_view(request, object_id, form_url, context)


GRAPH_FIELDS = ("properties", ("trust", "status"), ("valid_from", "valid_to"))
SCOPE_FIELDS = (("agent_id", "user_id"), ("project_id", "thread_id"))
RECORD_FIELDS = ("id", ("created_at", "updated_at"))


@admin.register(GraphNode)
class GraphNodeAdmin(GraphReviewAdmin):
    activate = ActivateGraphNodes
    reject = RejectGraphNodes
    list_display = ("name", "type", "status", "scope", "evidence_count")
    list_filter = (VisibleAgentFilter, "status", "type", "trust")
    search_fields = ("name",)
    search_help_text = _("A name or an alias, case and spacing aside.")
    ordering = ("-created_at", "-id")
    sortable_by = ()
    actions = ["activate_selected", "reject_selected", "merge_selected"]
    fieldsets = (
        (None, {"fields": (("name", "type"), "aliases", "entity", *GRAPH_FIELDS)}),
        (_("Grants"), {"fields": SCOPE_FIELDS}),
        (_("Record"), {"classes": ("collapse",), "fields": RECORD_FIELDS}),
    )
    readonly_fields = (
        "id",
        "name",
        "type",
        "aliases",
        "entity",
        "properties",
        "trust",
        "status",
        "valid_from",
        "valid_to",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
        "created_at",
        "updated_at",
    )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """Nodes whose name or an alias holds the words (``nodes_named``)."""
        if not search_term.strip():
            return queryset, False
        return nodes_named(queryset, search_term), False  # type: ignore[arg-type]

    def page_context(self, request: HttpRequest, row: Any) -> dict[str, Any]:
        return {**super().page_context(request, row), "edges": self._edges(request, row)}

    def _edges(self, request: HttpRequest, node: GraphNode) -> list[EdgeView]:
        """The node's edges within the staff user's grants, every status, by relation."""
        edges = (
            MemoryGraph()
            .edges(grants=grants_for_user(request.user), node=node)
            .select_related("source", "target")
            .order_by("relation", "pk")
        )
        shown = []
        for edge in edges:
            outgoing = edge.source_id == node.pk
            other = edge.target if outgoing else edge.source
            shown.append(
                EdgeView(
                    edge,
                    outgoing,
                    other,
                    self.row_url(other),
                    self.row_url(edge),
                    quotes_of(edge.evidence.all(), admin_site=self.admin_site.name),
                )
            )
        return shown

    # --- merging ---------------------------------------------------------------------------

    def has_merge_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(f"{self.opts.app_label}.change_graphnode"))

    @admin.action(description=_("Merge the selected nodes…"), permissions=["merge"])
    def merge_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponse | None:
        """A page to choose the node kept and see what moves into it; once posted with
        the choice, the merge."""
        ids = self.chosen_ids(request, queryset)
        nodes = list(queryset.filter(pk__in=ids).order_by("name", "pk")[:LISTED])
        if len(nodes) < 2:
            self.message_user(
                request, gettext("Choose two nodes or more to merge."), messages.ERROR
            )
            return None
        keep = request.POST.get("keep", "")
        if request.POST.get("confirmed") and keep in {node.pk for node in nodes}:
            others = [node.pk for node in nodes if node.pk != keep]
            try:
                kept = MemoryGraph().merge_nodes(keep, others, grants=grants_for_user(request.user))
            except CogitatorMemoryError as exc:
                self.message_user(
                    request,
                    gettext("Nothing was merged: %(why)s") % {"why": error_text(exc)},
                    messages.ERROR,
                )
                return None
            self.message_user(
                request,
                gettext("%(count)d nodes merged into %(name)s.")
                % {"count": len(others), "name": kept.name},
                messages.SUCCESS,
            )
            return HttpResponseRedirect(self.row_url(kept))
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Merge graph nodes"),
            "opts": self.opts,
            "nodes": [self._brings(request, node) for node in nodes],
            "keep": keep or nodes[0].pk,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/cogitator_memory/graphnode/merge.html", context)

    def _brings(self, request: HttpRequest, node: GraphNode) -> MergeView:
        """What the node brings into the one kept when it is merged."""
        edges = [
            f"{edge.source.name} — {edge.relation} → {edge.target.name} ({edge.status})"
            for edge in MemoryGraph()
            .edges(grants=grants_for_user(request.user), node=node)
            .select_related("source", "target")
            .order_by("relation", "pk")
        ]
        return MergeView(
            node,
            [node.name, *(node.aliases or [])],
            [evidence.quote for evidence in node.evidence.order_by("id")],
            edges,
        )


@admin.register(GraphEdge)
class GraphEdgeAdmin(GraphReviewAdmin):
    activate = ActivateGraphEdges
    reject = RejectGraphEdges
    list_display = ("edge", "status", "scope", "evidence_count")
    list_filter = (VisibleAgentFilter, "status", "trust")
    search_fields = ("relation",)
    ordering = ("-created_at", "-id")
    sortable_by = ()
    list_select_related = ("source", "target")
    actions = ["activate_selected", "reject_selected"]
    fieldsets = (
        (None, {"fields": (("source", "relation", "target"), "weight", *GRAPH_FIELDS)}),
        (_("Grants"), {"fields": SCOPE_FIELDS}),
        (_("Record"), {"classes": ("collapse",), "fields": RECORD_FIELDS}),
    )
    readonly_fields = (
        "id",
        "source",
        "relation",
        "target",
        "weight",
        "properties",
        "trust",
        "status",
        "valid_from",
        "valid_to",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
        "created_at",
        "updated_at",
    )

    @admin.display(description=_("edge"))
    def edge(self, obj: GraphEdge) -> str:
        return f"{obj.source.name} — {obj.relation} → {obj.target.name}"
