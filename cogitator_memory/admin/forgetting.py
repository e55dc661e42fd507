"""Forgetting in the admin: the adapters of the forgetting actions
(``cogitator_memory.cascade.actions``).

- A thread's entries: "Delete with replies" and "Redact with replies", buttons on each
  entry of the thread's tree and actions of the entry list (``EntryForgettingAdmin``);
- a thread: "Rewind here" on its tree and Django's "Delete" (``ThreadForgettingAdmin``);
- a user: the "Forget a user" page (``forget_user_view``, on the forget runs' admin).

Each takes its own permission (the action's: ``delete_entry``, ``redact_entry``,
``rewind_thread``, ``delete_thread``, ``forget_user_memory``), within the staff user's
grants, and first shows a confirmation page with what would go counted per store, from a
dry run of the cascade (``Preview``); the counts of what went are then the message (or,
for a user, the forget run's page). The action writes the admin log: what kind and how
many, never what went.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.review import error_text
from cogitator_memory.cascade.actions import (
    DeleteEntries,
    DeleteThread,
    ForgetUser,
    Preview,
    RedactEntries,
    RewindThread,
)
from cogitator_memory.cascade.audit import counts_text
from cogitator_memory.cascade.report import CascadeReport, counted_lines, sum_counts
from cogitator_memory.cascade.runs import MAX_AGENTS
from cogitator_memory.exceptions import CogitatorMemoryError, InvalidInput, ThreadNotFound
from cogitator_memory.grants import USER_ID_MAX_LENGTH
from cogitator_memory.review import Via
from cogitator_memory.threads.models import Entry, Thread

__all__ = [
    "EntryForgettingAdmin",
    "ForgetUserForm",
    "ThreadForgettingAdmin",
    "confirmation_page",
    "forget_user_url",
    "forget_user_view",
]

# The entry actions, by the name in their URL.
ENTRY_ACTIONS: dict[str, type[DeleteEntries] | type[RedactEntries]] = {
    "delete": DeleteEntries,
    "redact": RedactEntries,
}
# Chosen entries a confirmation page lists by id.
TARGETS_LISTED = 20


def confirmation_page(
    request: HttpRequest,
    model_admin: admin.ModelAdmin,
    *,
    title: str,
    intro: str,
    preview: Preview,
    form_action: str,
    hidden: Sequence[tuple[str, str]],
    submit_label: str,
    cancel_url: str,
    original: Any = None,
    targets: Sequence[str] = (),
    note: str = "",
    ask_reason: bool = False,
    reason: str = "",
    type_to_confirm: str | None = None,
    problem: str | None = None,
) -> TemplateResponse:
    """The page that shows what a forgetting would take, per store, and confirms it."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.opts,
        "original": original,
        "intro": intro,
        "targets": list(targets)[:TARGETS_LISTED],
        "lines": preview.lines(),
        "note": note,
        "form_action": form_action,
        "hidden": list(hidden),
        "submit_label": submit_label,
        "cancel_url": cancel_url,
        "ask_reason": ask_reason,
        "reason": reason,
        "type_to_confirm": type_to_confirm,
        "problem": problem,
    }
    return TemplateResponse(request, "admin/cogitator_memory/forget_confirm.html", context)


def done_message(what: str, report: CascadeReport) -> str:
    return gettext("%(what)s; %(counts)s.") % {"what": what, "counts": counts_text(report.counts())}


def _admin_url(model_admin: admin.ModelAdmin, name: str, *args: Any) -> str:
    opts = model_admin.opts
    return reverse(
        f"admin:{opts.app_label}_{opts.model_name}_{name}",
        args=list(args),
        current_app=model_admin.admin_site.name,
    )


def _thread_url(model_admin: admin.ModelAdmin, thread_id: str) -> str:
    return reverse(
        "admin:cogitator_memory_thread_change",
        args=[quote(thread_id)],
        current_app=model_admin.admin_site.name,
    )


# --- entries ---------------------------------------------------------------------------


class EntryForgettingAdmin(admin.ModelAdmin):
    """ "Delete with replies" and "Redact with replies" for entries: list actions, and a
    view the thread's tree posts its buttons to (``forget/delete/``, ``forget/redact/``,
    with ``entry_id`` values). The first post shows the confirmation page; the post of
    that page (``confirmed``) runs the action."""

    def has_forget_delete_permission(self, request: HttpRequest) -> bool:
        return DeleteEntries.holds_permission(request.user)

    def has_forget_redact_permission(self, request: HttpRequest) -> bool:
        return RedactEntries.holds_permission(request.user)

    @admin.action(description=_("Delete with replies…"), permissions=["forget_delete"])
    def delete_with_replies(self, request: HttpRequest, queryset: QuerySet[Entry]) -> HttpResponse:
        return self.forget_entries(request, "delete", self._chosen(request, queryset))

    @admin.action(description=_("Redact with replies…"), permissions=["forget_redact"])
    def redact_with_replies(self, request: HttpRequest, queryset: QuerySet[Entry]) -> HttpResponse:
        return self.forget_entries(request, "redact", self._chosen(request, queryset))

    @staticmethod
    def _chosen(request: HttpRequest, queryset: QuerySet[Entry]) -> list[str]:
        if request.POST.get("select_across") == "1":
            return [str(pk) for pk in queryset.values_list("pk", flat=True)[:1000]]
        return request.POST.getlist(ACTION_CHECKBOX_NAME)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path(
                f"forget/{kind}/",
                view(require_POST(self._forget_view(kind))),
                name=f"{self.opts.app_label}_{self.opts.model_name}_forget_{kind}",
            )
            for kind in ENTRY_ACTIONS
        ]
        # Before the admin's own patterns, whose "<path:object_id>/" would match first.
        return own + super().get_urls()

    def _forget_view(self, kind: str) -> Any:
        def view(request: HttpRequest) -> HttpResponse:
            return self.forget_entries(request, kind, request.POST.getlist("entry_id"))

        return view

    def _back(self, request: HttpRequest, entry_ids: Sequence[str]) -> str:
        """Where to go afterwards: the thread of the entries, when they are of one the
        staff user may see."""
        visible = Entry.objects.visible_to(grants_for_user(request.user))
        threads = set(
            visible.filter(pk__in=list(entry_ids)[:500]).values_list("thread_id", flat=True)
        )
        if len(threads) == 1:
            return _thread_url(self, threads.pop())
        return _admin_url(self, "changelist")

    def forget_entries(self, request: HttpRequest, kind: str, entry_ids: list[str]) -> HttpResponse:
        action_class = ENTRY_ACTIONS[kind]
        action = action_class(request.user, grants=grants_for_user(request.user), via=Via.ADMIN)
        if not action.may():
            raise PermissionDenied
        ids = [entry_id for entry_id in dict.fromkeys(entry_ids) if entry_id]
        back = self._back(request, ids)
        if not ids:
            self.message_user(request, gettext("Choose entries."), messages.ERROR)
            return HttpResponseRedirect(back)
        redact = kind == "redact"
        reason = request.POST.get("reason", "").strip()
        problem = None
        if request.POST.get("confirmed") == "yes":
            try:
                if isinstance(action, RedactEntries):
                    report = action.execute(ids, reason=reason or None)
                else:
                    report = action.execute(ids)
            except InvalidInput as exc:
                # A reason too long: the page again, saying so.
                problem = error_text(exc)
            except CogitatorMemoryError as exc:
                self.message_user(
                    request,
                    gettext("Nothing was changed: %(why)s") % {"why": error_text(exc)},
                    messages.ERROR,
                )
                return HttpResponseRedirect(back)
            else:
                what = (
                    gettext("Redacted with their replies")
                    if redact
                    else gettext("Deleted with their replies")
                )
                self.message_user(request, done_message(what, report), messages.SUCCESS)
                return HttpResponseRedirect(back)
        try:
            preview = action.preview(ids)
        except CogitatorMemoryError as exc:
            self.message_user(
                request,
                gettext("Nothing was changed: %(why)s") % {"why": error_text(exc)},
                messages.ERROR,
            )
            return HttpResponseRedirect(back)
        count = len(ids)
        if redact:
            title = gettext("Redact with replies")
            intro = gettext(
                "The chosen entries lose what they said and keep their place; so do the "
                "replies of the user messages among them (up to the next user message, on "
                "every branch) and their copies in forks, while events among them are "
                "deleted. What memory derived from them goes."
            )
            submit = gettext("Redact")
        else:
            title = gettext("Delete with replies")
            intro = gettext(
                "The chosen entries are deleted, with the replies of the user messages among "
                "them (up to the next user message, on every branch), their copies in forks "
                "and what memory derived from them. The entries after them move up."
            )
            submit = gettext("Delete")
        return confirmation_page(
            request,
            self,
            title=f"{title} ({count})",
            intro=intro,
            preview=preview,
            targets=ids,
            form_action=_admin_url(self, f"forget_{kind}"),
            hidden=[("entry_id", entry_id) for entry_id in ids],
            submit_label=submit,
            cancel_url=back,
            ask_reason=redact,
            reason=reason,
            problem=problem,
        )


# --- threads ---------------------------------------------------------------------------


class ThreadForgettingAdmin(admin.ModelAdmin):
    """Deleting and rewinding a thread through the cascade, each with its counts first."""

    delete_confirmation_template = "admin/cogitator_memory/thread/delete_confirmation.html"
    delete_selected_confirmation_template = (
        "admin/cogitator_memory/thread/delete_selected_confirmation.html"
    )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {**(extra_context or {}), "forget_user_url": forget_user_url(self, request)}
        return super().changelist_view(request, context)

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        """What the delete confirmation shows: the threads, and what deleting them would
        take, counted per store by a dry run of ``delete_thread`` (none once confirmed:
        the deletion itself follows)."""
        threads = [thread.pk for thread in objs]
        listed = [f"{Thread._meta.verbose_name}: {thread_id}" for thread_id in threads]
        if request.POST.get("post"):
            return listed, {}, set(), []
        action = DeleteThread(request.user, grants=grants_for_user(request.user), via=Via.ADMIN)
        if not action.may():
            return listed, {}, {str(Thread._meta.verbose_name_plural)}, []
        counts: dict[str, Any] = {}
        entries: dict[str, int] = {}
        for thread_id in threads:
            try:
                preview = action.preview(thread_id)
            except ThreadNotFound:
                continue
            counts = sum_counts(counts, preview.counts)
            for label, number in preview.entries:
                entries[label] = entries.get(label, 0) + number
        lines = [*((label, n) for label, n in entries.items() if n), *counted_lines(counts)]
        return listed, dict(lines), set(), []

    def log_deletions(self, request: HttpRequest, queryset: Any) -> list[Any]:
        # The action logs each deletion once it is done, with what went counted (Django's
        # own row, written before, would go with the thread's other log rows).
        return []

    def delete_model(self, request: HttpRequest, obj: Thread) -> None:
        self._delete_threads(request, [obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Thread]) -> None:
        self._delete_threads(request, list(queryset.values_list("pk", flat=True)))

    def _delete_threads(self, request: HttpRequest, thread_ids: list[str]) -> None:
        action = DeleteThread(request.user, grants=grants_for_user(request.user), via=Via.ADMIN)
        total: dict[str, Any] = {}
        for thread_id in thread_ids:
            try:
                total = sum_counts(total, action.execute(thread_id).counts())
            except ThreadNotFound:
                continue
        if total:
            self.message_user(
                request,
                gettext("With the threads went %(counts)s.") % {"counts": counts_text(total)},
                messages.INFO,
            )

    def rewind_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Move the active leaf back to the posted ``entry_id`` on the active branch: the
        confirmation page first (the items that would be marked stale), then the rewind."""
        thread = self.get_object(request, unquote(object_id))
        if thread is None:
            raise Http404(gettext("No thread with this id."))
        action = RewindThread(request.user, grants=grants_for_user(request.user), via=Via.ADMIN)
        if not action.may():
            raise PermissionDenied
        change_url = _thread_url(self, thread.pk)
        entry_id = request.POST.get("entry_id", "").strip()
        if not entry_id:
            self.message_user(request, gettext("Choose an entry."), messages.ERROR)
            return HttpResponseRedirect(change_url)
        try:
            if request.POST.get("confirmed") == "yes":
                previous = thread.active_leaf_id
                report = action.execute(thread.pk, entry_id)
                what = gettext("Rewound to entry %(entry)s (the active leaf was %(previous)s)") % {
                    "entry": entry_id,
                    "previous": previous or gettext("none"),
                }
                self.message_user(request, done_message(what, report), messages.SUCCESS)
                return HttpResponseRedirect(change_url)
            preview = action.preview(thread.pk, entry_id)
        except CogitatorMemoryError as exc:
            self.message_user(request, error_text(exc), messages.ERROR)
            return HttpResponseRedirect(change_url)
        return confirmation_page(
            request,
            self,
            title=gettext("Rewind"),
            intro=gettext(
                "The active leaf moves back to entry %(entry)s; nothing is deleted, and the "
                "entries after it stay on a branch of their own. The memory items that stood "
                "only on them become stale until a reviewer activates them again."
            )
            % {"entry": entry_id},
            preview=preview,
            original=thread,
            form_action=_admin_url(self, "rewind", quote(thread.pk)),
            hidden=[("entry_id", entry_id)],
            submit_label=gettext("Rewind"),
            cancel_url=change_url,
        )


# --- a user ----------------------------------------------------------------------------


def _agent_list(value: str) -> list[str]:
    return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]


class ForgetUserForm(forms.Form):
    user_id = forms.CharField(
        label=_("User id"),
        max_length=USER_ID_MAX_LENGTH,
        strip=False,
        help_text=_("As the threads name it (metadata.userId)."),
    )
    agent_ids = forms.CharField(
        label=_("Agents"),
        required=False,
        help_text=_(
            "Agent ids separated by commas. Empty: every agent your grants reach for the user."
        ),
    )

    def clean_agent_ids(self) -> list[str] | None:
        agents = _agent_list(self.cleaned_data.get("agent_ids") or "")
        if len(agents) > MAX_AGENTS:
            raise forms.ValidationError(
                gettext("Name at most %(count)d agents.") % {"count": MAX_AGENTS}
            )
        return agents or None


def forget_user_url(model_admin: admin.ModelAdmin, request: HttpRequest) -> str | None:
    """The "Forget a user" page, for a staff user who may forget."""
    if not ForgetUser.holds_permission(request.user):
        return None
    return reverse(
        "admin:cogitator_memory_forgetrun_forget_user", current_app=model_admin.admin_site.name
    )


def forget_user_view(request: HttpRequest, model_admin: admin.ModelAdmin) -> HttpResponse:
    """ "Forget a user": the form (GET), the counts per store and the typed confirmation
    (POST), then the forget run, whose page shows its progress and what went."""
    grants = grants_for_user(request.user)
    action = ForgetUser(request.user, grants=grants, via=Via.ADMIN)
    if not action.may():
        raise PermissionDenied
    changelist = _admin_url(model_admin, "changelist")
    form = ForgetUserForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        user_id: str = form.cleaned_data["user_id"]
        agents: list[str] | None = form.cleaned_data["agent_ids"]
        problem = None
        if request.POST.get("confirmed") == "yes":
            try:
                run, _created = action.request(
                    user_id, agents, confirm=request.POST.get("confirm", "")
                )
            except CogitatorMemoryError as exc:
                problem = error_text(exc)
            else:
                model_admin.message_user(
                    request,
                    gettext("Forgetting user %(user)s: run %(run)s.")
                    % {"user": user_id, "run": run.pk},
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(_admin_url(model_admin, "change", quote(run.pk)))
        try:
            preview = action.preview(user_id, agents)
        except CogitatorMemoryError as exc:
            form.add_error(None, error_text(exc))
        else:
            return confirmation_page(
                request,
                model_admin,
                title=gettext("Forget user %(user)s") % {"user": user_id},
                intro=gettext(
                    "Everything memory keeps of user %(user)s in %(agents)s goes, for good: "
                    "their threads, their messages in threads of others with the replies, "
                    "the memory items, entities and memory files of their scope, their "
                    "vectors and channel sessions."
                )
                % {
                    "user": user_id,
                    "agents": ", ".join(agents) if agents else gettext("every agent you reach"),
                },
                preview=preview,
                note=gettext(
                    "Counted by a dry run of the forgetting, rolled back. Threads of others "
                    "out of your reach are left as they are. The forgetting runs in the "
                    "background; its page shows how far it is."
                ),
                form_action="",
                hidden=[("user_id", user_id), ("agent_ids", ", ".join(agents or []))],
                submit_label=gettext("Forget this user"),
                cancel_url=changelist,
                type_to_confirm=user_id,
                problem=problem,
            )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": gettext("Forget a user"),
        "opts": model_admin.opts,
        "form": form,
        "granted_agents": sorted(grants.agent_ids) if grants.agent_ids is not None else [],
    }
    return TemplateResponse(request, "admin/cogitator_memory/forget_user.html", context)
