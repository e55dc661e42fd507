"""The playbook review: playbook drafts in the admin.

The list shows the drafts of the scopes the staff user's grants reach, each with its
scope, when it was drafted and how many rules it adds or rewrites. A draft's page shows it
as a diff against the playbook that stands in exactly its scope, then every rule it adds
or rewrites with the lessons the rule names: each lesson's text, status and trust, and
its evidence quotes with a link to the quoted entry in its thread. A lesson that is gone,
or out of the reviewer's grants, is said to be so, never shown.

Promote and Discard are review actions (``upkeep.review``): each has its permission, a
confirmation page (GET says what will happen, POST does it), writes the admin log, and is
refused with a message when it cannot be made (a playbook that changed since the draft,
a draft a model wrote). Drafts are changed by review only: nothing is added, edited or
deleted by hand here. Every text of a draft or a lesson is escaped by the templates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import conditional_escape
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.file_diff import FileDiff, diff_texts
from cogitator_memory.admin.items import QuoteView, quoted_entry_url, said_by
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin
from cogitator_memory.admin.review import ReviewAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.exceptions import NotFound, ReviewRefused
from cogitator_memory.files.models import Author, MemoryFileHead
from cogitator_memory.files.paths import PLAYBOOK_PATH
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import Evidence, MemoryItem
from cogitator_memory.upkeep.models import PlaybookDraft
from cogitator_memory.upkeep.playbook import exact_head, read_playbook
from cogitator_memory.upkeep.playbook_text import PlaybookRule, parse_playbook
from cogitator_memory.upkeep.review import (
    DiscardPlaybookDraft,
    PlaybookDraftReview,
    PromotePlaybook,
)

__all__ = ["PlaybookDraftAdmin", "RuleChange", "rule_changes"]

# The decisions of a draft's page, in the order of its buttons: the class, its label,
# the last segment of its URL and what its confirmation page says will happen.
DECISIONS: tuple[tuple[type[PlaybookDraftReview], Any, str, Any], ...] = (
    (
        PromotePlaybook,
        _("Promote"),
        "promote",
        _(
            "The draft becomes the playbook of this scope (a new version of the playbook, "
            "written by you) and the draft is deleted. Every run of the scope reads the "
            "playbook from then on."
        ),
    ),
    (
        DiscardPlaybookDraft,
        _("Discard"),
        "discard",
        _(
            "The draft is deleted; the playbook stays as it is. The draft's versions stay "
            "in its file history."
        ),
    ),
)
FILE_VIEW_PERMISSION = "cogitator_memory.view_memoryfilehead"


@dataclass(frozen=True)
class RuleChange:
    """A rule of the draft that the playbook does not hold: added, or rewriting
    ``replaces`` (the playbook's rules, gone from the draft, that named one of its
    lessons)."""

    rule: PlaybookRule
    replaces: tuple[PlaybookRule, ...] = ()

    @property
    def rewritten(self) -> bool:
        return bool(self.replaces)


def rule_changes(
    playbook: Sequence[PlaybookRule], draft: Sequence[PlaybookRule]
) -> list[RuleChange]:
    """The rules ``draft`` adds or rewrites against ``playbook``. A rewrite keeps the
    lessons of the rule it rewrites, so a new rule naming a lesson of a rule the draft
    no longer holds is that rule rewritten."""
    standing = {rule.text for rule in playbook}
    kept = {rule.text for rule in draft}
    dropped = [rule for rule in playbook if rule.text not in kept]
    changes = []
    for rule in draft:
        if rule.text in standing:
            continue
        named = set(rule.lesson_ids)
        replaces = tuple(old for old in dropped if named & set(old.lesson_ids))
        changes.append(RuleChange(rule, replaces))
    return changes


@dataclass(frozen=True)
class LessonView:
    """What the page shows of one lesson a rule names: the item, or None when it is
    gone or out of the reviewer's grants (then only its id)."""

    lesson_id: str
    item: MemoryItem | None
    url: str | None = None
    quotes: list[QuoteView] = field(default_factory=list)


@dataclass(frozen=True)
class ChangeView:
    change: RuleChange
    lessons: list[LessonView]


@dataclass(frozen=True)
class DraftState:
    """A draft as its page and its row read it: its text and author, the playbook's
    text in the same scope (None when none stands) and the rules it changes."""

    text: str
    author: str
    playbook_text: str | None
    changes: list[RuleChange]

    @property
    def added(self) -> int:
        return sum(1 for change in self.changes if not change.rewritten)

    @property
    def rewritten(self) -> int:
        return sum(1 for change in self.changes if change.rewritten)

    @property
    def diff(self) -> FileDiff:
        return diff_texts(self.playbook_text, self.text)


def draft_state(draft: PlaybookDraft) -> DraftState:
    """The draft as its head stands (whoever wrote it: a model's draft is shown, and
    refused on promotion) against the playbook that stands in exactly its scope."""
    version = draft.version  # read with the row on the list (list_select_related)
    text = version.content or ""
    playbook = read_playbook(MemoryScope.of(draft))
    changes = rule_changes(
        playbook.rules if playbook is not None else (), parse_playbook(text).rules
    )
    return DraftState(
        text=text,
        author=version.author,
        playbook_text=playbook.text if playbook is not None else None,
        changes=changes,
    )


def scope_text(scope: MemoryScope) -> str:
    """A scope as the page names it: "agent 'concierge', user 'ana'"."""
    return ", ".join(
        f"{gettext(name.removesuffix('_id'))} {value!r}"
        for name, value in scope.as_fields().items()
        if value
    )


# Read-only by hand: a draft is written by folds and changed by review (promote,
# discard), never by editing.
@admin.register(PlaybookDraft)
class PlaybookDraftAdmin(ReviewAdmin, GrantScopedAdmin, ReadOnlyAdmin, LargeTableAdmin):
    list_display = ("draft", "agent_id", "user_id", "project_id", "thread_id", "drafted", "rules")
    list_display_links = ("draft",)
    list_select_related = ("version",)
    ordering = ("-updated_at", "-id")
    sortable_by = ()
    actions = ()
    fieldsets = (
        (None, {"fields": ("path", "updated_at")}),
        (_("Scope"), {"fields": (("agent_id", "user_id"), ("project_id", "thread_id"))}),
    )
    readonly_fields = (
        "path",
        "updated_at",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
    )

    class Media:
        css = {"all": ["cogitator_memory/files.css", "cogitator_memory/review.css"]}

    # --- the list ------------------------------------------------------------------------

    @admin.display(description=_("draft"))
    def draft(self, obj: PlaybookDraft) -> str:
        return gettext("Draft %(id)s") % {"id": obj.pk}

    @admin.display(description=_("drafted"))
    def drafted(self, obj: PlaybookDraft) -> Any:
        return obj.updated_at

    @admin.display(description=_("rules added, rewritten"))
    def rules(self, obj: PlaybookDraft) -> str:
        state = draft_state(obj)
        return gettext("%(added)d added, %(rewritten)d rewritten") % {
            "added": state.added,
            "rewritten": state.rewritten,
        }

    # --- the decisions -------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path(
                f"<path:object_id>/{segment}/",
                view(self._confirmation_view(decision, segment, happens)),
                name=f"{self.opts.app_label}_{self.opts.model_name}_{segment}",
            )
            for decision, _label, segment, happens in DECISIONS
        ]
        return own + super().get_urls()

    def _url(self, name: str, *args: Any) -> str:
        return reverse(
            f"admin:{self.opts.app_label}_{self.opts.model_name}_{name}",
            args=args,
            current_app=self.admin_site.name,
        )

    def _confirmation_view(
        self, decision: type[PlaybookDraftReview], segment: str, happens: Any
    ) -> Callable[..., HttpResponse]:
        def view(request: HttpRequest, object_id: str) -> HttpResponse:
            return self.confirmation_view(request, object_id, decision, segment, happens)

        return view

    def confirmation_view(
        self,
        request: HttpRequest,
        object_id: str,
        decision: type[PlaybookDraftReview],
        segment: str,
        happens: Any,
    ) -> HttpResponse:
        """GET: what the decision will do; POST: the decision, then a message and the
        list (the draft is gone) or, when refused, back to the draft's page. 404 for a
        draft the staff user cannot see (and, on GET, for one already decided), 403
        without the permission (or without the drafts' view permission)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        row_id = unquote(object_id)
        action = self.review(request, decision)
        try:
            (row,) = action.authorize([row_id])
        except NotFound as exc:
            raise Http404(exc.message) from exc
        except ReviewRefused as exc:
            raise PermissionDenied(exc.message) from exc
        draft_page = self._url("change", quote(row_id))
        if request.method == "POST":
            if self.decide(request, decision, [row_id]):
                return HttpResponseRedirect(self._url("changelist"))
            return HttpResponseRedirect(draft_page)
        if request.method != "GET":
            return HttpResponse(status=405, headers={"Allow": "GET, POST"})
        if not action.applies_to(row):
            # Promoted or discarded already: nothing stands to confirm.
            raise Http404(gettext("This playbook draft was promoted or discarded."))
        state = draft_state(row)
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("%(decision)s this playbook draft?")
            % {"decision": decision.label().capitalize()},
            "opts": self.opts,
            "original": row,
            "scope": MemoryScope.of(row),
            "decision": segment,
            "happens": happens,
            "state": state,
            "draft_url": draft_page,
        }
        return TemplateResponse(
            request, "admin/cogitator_memory/playbookdraft/confirm.html", context
        )

    # --- the draft's page ----------------------------------------------------------------

    def _lessons(self, ids: Sequence[str], grants: Grants) -> dict[str, LessonView]:
        evidence = Evidence.objects.select_related("entry").order_by("id")
        found = {
            item.pk: item
            for item in MemoryItem.objects.visible_to(grants)
            .filter(pk__in=list(ids))
            .select_related("subject")
            .prefetch_related(Prefetch("evidence", queryset=evidence))
        }
        views = {}
        for lesson_id in ids:
            item = found.get(lesson_id)
            if item is None:
                views[lesson_id] = LessonView(lesson_id, None)
                continue
            quotes = [
                QuoteView(
                    evidence=shown,
                    text=conditional_escape(shown.quote),
                    thread_url=quoted_entry_url(shown, admin_site=self.admin_site.name),
                    said_by=said_by(shown),
                )
                for shown in item.evidence.all()
            ]
            url = reverse(
                "admin:cogitator_memory_memoryitem_change",
                args=[quote(item.pk)],
                current_app=self.admin_site.name,
            )
            views[lesson_id] = LessonView(lesson_id, item, url, quotes)
        return views

    def _history_urls(self, request: HttpRequest, draft: PlaybookDraft) -> dict[str, str]:
        """The files admin's pages of the draft and of the playbook, when the staff user
        may open them."""
        if MemoryFileHead not in self.admin_site._registry or not request.user.has_perm(
            FILE_VIEW_PERMISSION
        ):
            return {}
        page = "admin:cogitator_memory_memoryfilehead_change"
        urls = {"draft": reverse(page, args=[quote(draft.pk)], current_app=self.admin_site.name)}
        playbook = exact_head(MemoryScope.of(draft), PLAYBOOK_PATH)
        if playbook is not None:
            urls["playbook"] = reverse(
                page, args=[quote(playbook.pk)], current_app=self.admin_site.name
            )
        return urls

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        draft = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if draft is not None:
            grants = grants_for_user(request.user)
            state = draft_state(draft)
            ids = list(dict.fromkeys(i for change in state.changes for i in change.rule.lesson_ids))
            lessons = self._lessons(ids, grants)
            context.update(
                title=gettext("Playbook draft"),
                subtitle=scope_text(MemoryScope.of(draft)),
                state=state,
                by_model=state.author == Author.MODEL,
                changes=[
                    ChangeView(change, [lessons[i] for i in change.rule.lesson_ids])
                    for change in state.changes
                ],
                history_urls=self._history_urls(request, draft),
                decisions=[
                    {"name": segment, "label": label, "url": self._url(segment, quote(draft.pk))}
                    for decision, label, segment, _happens in DECISIONS
                    if self.review(request, decision, grants=grants).allowed_on(draft)
                ],
            )
        return super().change_view(request, object_id, form_url, context)
