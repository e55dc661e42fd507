"""Threads and their entries in the admin.

Entries are a record of what was said: the admin shows them and never edits them by
hand, since a hand edit would bypass the tree rules (seq, parents, the active leaf) and
the signals that keep derived memory in step. A thread's page shows its entry tree, with
a checkout button that calls the thread service, "Rewind here", "Delete…" and "Redact…"
buttons that go through the cascade after a confirmation page (``admin/forgetting.py``),
and its compactions, each the handoff with its levels to expand
(``admin/compaction.py``), and links to a preview of the context its next turn would get
(``admin/context_preview.py``). Deleting a thread goes through the cascade too.

Both pages start from ``visible_to(scope)``: a staff user sees the threads of the agents
granted to them, as the REST API does; a superuser sees all. Both lists stay fast on
tables of millions of rows (``admin.scale``): filters, drill-down and sorting are served
by indexes, and counts are bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Substr
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from cogitator_memory import policy
from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.compaction import compaction_handoffs
from cogitator_memory.admin.context_preview import (
    ContextPreviewForm,
    build_preview,
    preview_context,
)
from cogitator_memory.admin.entry_tree import build_entry_tree, content_preview
from cogitator_memory.admin.filters import VisibleAgentFilter
from cogitator_memory.admin.forgetting import EntryForgettingAdmin, ThreadForgettingAdmin
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.cascade.actions import (
    DeleteEntries,
    RedactEntries,
    RewindThread,
)
from cogitator_memory.compaction.history import compaction_event
from cogitator_memory.exceptions import (
    CogitatorMemoryError,
    InvalidInput,
    NoGrant,
    ThreadNotFound,
)
from cogitator_memory.grants import Grants, thread_owner
from cogitator_memory.threads import services
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry, EntryType, Thread
from cogitator_memory.threads.text import content_text, entry_text
from cogitator_memory.threads.validation import validate_thread_metadata


class ThreadAdminForm(forms.ModelForm):
    """The thread's metadata, checked by the same rules as the API's: valid metadata, and
    a user the staff user's grants reach (``policy.require_write``)."""

    # Set per request by ThreadAdmin.get_form: whose grants the change must stay within.
    grants: Grants | None = None

    class Meta:
        model = Thread
        fields = ("metadata",)

    def clean_metadata(self) -> dict[str, Any]:
        try:
            metadata = validate_thread_metadata(self.cleaned_data.get("metadata"))
            policy.require_write(self.grants, self.instance.agent_id, thread_owner(metadata))
        except InvalidInput as exc:
            raise ValidationError(
                [message for messages in exc.errors.values() for message in messages]
            ) from exc
        except NoGrant as exc:
            raise ValidationError(exc.message) from exc
        return metadata


@admin.register(Thread)
class ThreadAdmin(ThreadForgettingAdmin, GrantScopedAdmin, LargeTableAdmin):
    form = ThreadAdminForm
    list_display = ("id", "agent_id", "user_id", "updated_at", "created_at")
    list_filter = (VisibleAgentFilter, "updated_at")
    search_fields = ("id", "agent_id", "metadata")
    date_hierarchy = "updated_at"
    ordering = ("-updated_at", "-id")
    # Columns an index sorts both ways (cm_thread_updated, the key). Not the agent: its
    # index holds each agent's threads newest first, so a descending sort by agent would
    # sort all the threads of an agent, and a filter by agent serves better.
    sortable_by = ("id", "updated_at")
    readonly_fields = (
        "id",
        "agent_id",
        "user_id",
        "active_leaf",
        "next_seq",
        "created_at",
        "updated_at",
    )
    fields = (
        "id",
        "agent_id",
        "user_id",
        "metadata",
        "active_leaf",
        "next_seq",
        "created_at",
        "updated_at",
    )
    # A thread's page shows at most this many entries, the newest.
    tree_entry_limit = 500

    class Media:
        css = {"all": ["cogitator_memory/entry_tree.css"]}

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Threads are created by the agents that use them, through the Python API or REST API.
        return False

    def get_form(
        self, request: HttpRequest, obj: Thread | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm]:
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"grants": grants_for_user(request.user)})

    def save_model(self, request: HttpRequest, obj: Thread, form: Any, change: bool) -> None:
        if "metadata" in form.changed_data:
            try:
                services.update_thread(
                    obj.pk,
                    form.cleaned_data["metadata"],
                    replace=True,
                    grants=grants_for_user(request.user),
                )
            except NoGrant as exc:
                # The grants changed between the form's check and the save.
                raise PermissionDenied(exc.message) from exc

    # --- the entry tree and its actions --------------------------------------------

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Thread | None = None,
    ) -> HttpResponse:
        if obj is not None:
            object_id = quote(obj.pk)
            context.update(
                entry_tree=build_entry_tree(
                    obj,
                    limit=self.tree_entry_limit,
                    highlight=request.GET.get("highlight") or None,
                ),
                can_move_leaf=self.has_change_permission(request, obj),
                can_rewind=RewindThread.holds_permission(request.user),
                can_delete_entries=DeleteEntries.holds_permission(request.user),
                can_redact_entries=RedactEntries.holds_permission(request.user),
                checkout_url=self._url("checkout", object_id),
                rewind_url=self._url("rewind", object_id),
                delete_entries_url=reverse(
                    "admin:cogitator_memory_entry_forget_delete", current_app=self.admin_site.name
                ),
                redact_entries_url=reverse(
                    "admin:cogitator_memory_entry_forget_redact", current_app=self.admin_site.name
                ),
                compactions=compaction_handoffs(obj),
                preview_context_url=self._url("preview_context", object_id),
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view
        own = [
            path(
                "<path:object_id>/checkout/",
                view(require_POST(self.checkout_view)),
                name=self._url_name("checkout"),
            ),
            path(
                "<path:object_id>/rewind/",
                view(require_POST(self.rewind_view)),
                name=self._url_name("rewind"),
            ),
            path(
                "<path:object_id>/preview-context/",
                view(self.preview_context_view),
                name=self._url_name("preview_context"),
            ),
        ]
        # Before the admin's own patterns, whose "<path:object_id>/" would match first.
        return own + super().get_urls()

    def _url_name(self, action: str) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_{action}"

    def _url(self, action: str, object_id: str) -> str:
        return reverse(
            f"admin:{self._url_name(action)}",
            args=[object_id],
            current_app=self.admin_site.name,
        )

    def checkout_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Make the branch ending at the posted ``entry_id`` the active one."""
        return self._move_leaf(
            request,
            object_id,
            move=services.checkout,
            done=gettext("Checked out entry {entry} (the active leaf was {previous})."),
        )

    def preview_context_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The context form (GET without parameters) and, once submitted (GET, as it
        changes nothing), what the thread's next turn would get, as the staff user's
        grants see it."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        thread = self.get_object(request, unquote(object_id))
        if thread is None:
            raise Http404(gettext("No thread with this id."))
        submitted = "max_tokens" in request.GET
        form = ContextPreviewForm(request.GET if submitted else None)
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "title": gettext("Preview context"),
            "subtitle": str(thread),
            "opts": self.opts,
            "original": thread,
            "change_url": self._url("change", quote(thread.pk)),
            "form": form,
        }
        if submitted and form.is_valid():
            try:
                built = build_preview(form, thread, grants=grants_for_user(request.user))
            except ThreadNotFound as exc:
                # The grants changed since the thread was read.
                raise Http404(exc.message) from exc
            if built is not None:
                context.update(
                    preview_context(
                        request,
                        built,
                        admin_site=self.admin_site,
                        budget=form.cleaned_data["max_tokens"],
                    )
                )
        return TemplateResponse(
            request, "admin/cogitator_memory/thread/preview_context.html", context
        )

    def _move_leaf(
        self,
        request: HttpRequest,
        object_id: str,
        *,
        move: Callable[..., Thread],
        done: str,
    ) -> HttpResponse:
        thread = self.get_object(request, unquote(object_id))
        if thread is None:
            raise Http404(gettext("No thread with this id."))
        if not self.has_change_permission(request, thread):
            raise PermissionDenied
        change_url = reverse(
            f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
            args=[quote(thread.pk)],
            current_app=self.admin_site.name,
        )
        entry_id = request.POST.get("entry_id", "").strip()
        if not entry_id:
            self.message_user(request, gettext("Choose an entry."), messages.ERROR)
            return HttpResponseRedirect(change_url)
        previous = thread.active_leaf_id
        try:
            thread = move(thread.pk, entry_id, grants=grants_for_user(request.user))
        except InvalidInput as exc:
            # The field name means nothing on this page; the messages say what is wrong.
            text = " ".join(message for field in exc.errors.values() for message in field)
            self.message_user(request, text, messages.ERROR)
            return HttpResponseRedirect(change_url)
        except CogitatorMemoryError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(change_url)
        message = done.format(entry=entry_id, previous=previous or gettext("none"))
        self.log_change(request, thread, message)
        self.message_user(request, message, messages.SUCCESS)
        return HttpResponseRedirect(change_url)


# --- entries ---------------------------------------------------------------------------


# Read-only: an entry is deleted or redacted with its replies through the cascade (the
# actions below, and the buttons of its thread's tree), never edited by hand.
@admin.register(Entry)
class EntryAdmin(EntryForgettingAdmin, GrantScopedAdmin, ReadOnlyAdmin, LargeTableAdmin):
    # Few, wrapping columns: the list fits a 1400 px window beside the navigation and the
    # filters.
    list_display = ("id", "thread", "position", "type_role", "summary", "created", "is_redacted")
    list_filter = ("type", "role", "created_at")
    search_fields = ("id", "thread__id")
    list_select_related = ("thread",)
    ordering = ("thread", "-seq")
    # Columns an index sorts both ways (the key, cm_entry_thread_seq, cm_entry_created).
    # Type and role are not: sorted descending, all entries of a type or role would be
    # sorted by thread, which their indexes hold ascending.
    sortable_by = ("id", "thread", "created")
    # Characters of a compaction's summary the list shows (read from the event, not the
    # whole event).
    summary_chars = 160
    actions = ["delete_with_replies", "redact_with_replies"]

    class Media:
        css = {"all": ["cogitator_memory/entry_tree.css", "cogitator_memory/records.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Entry]:
        """Entries of the threads the user may see. The list page leaves out tool calls,
        results and events, which can be large and are only shown on an entry's own page;
        of a compaction's event it reads the start of the summary."""
        return (
            super()
            .get_queryset(request)
            .defer("tool_calls", "tool_results", "event")
            .annotate(
                summary_start=Substr(
                    Cast(KeyTextTransform("summary", "event"), TextField()),
                    1,
                    self.summary_chars,
                )
            )
        )

    def get_fieldsets(self, request: HttpRequest, obj: Entry | None = None) -> Any:
        """The entry as a reader sees it first (its text; a compaction's summary and
        range), then the stored fields, the raw JSON folded away."""
        said = obj is None or obj.type in CONVERSATION_TYPES
        shown: list[Any] = [
            (None, {"fields": (("id", "thread"), ("seq", "parent"), ("type", "role", "name"))}),
            (
                _("Text") if said else _("When"),
                {
                    "fields": (
                        *(("text",) if said else ()),
                        ("created_at", "token_count"),
                        "redaction",
                    )
                },
            ),
        ]
        if obj is not None and obj.type == EntryType.COMPACTION:
            shown.append(
                (
                    _("Compaction"),
                    {"fields": ("compaction_summary", ("compaction_strategy", "compaction_range"))},
                )
            )
        shown.append(
            (
                _("Record"),
                {
                    "classes": ("collapse",),
                    "fields": (
                        "content",
                        "tool_call_id",
                        "tool_calls",
                        "tool_results",
                        "event",
                        "metadata",
                    ),
                },
            )
        )
        return shown

    def get_readonly_fields(self, request: HttpRequest, obj: Entry | None = None) -> Any:
        return [
            *(field.name for field in Entry._meta.concrete_fields),
            "text",
            "compaction_summary",
            "compaction_strategy",
            "compaction_range",
        ]

    @admin.display(description=_("content"))
    def summary(self, obj: Entry) -> str:
        start = getattr(obj, "summary_start", None)
        if obj.type == EntryType.COMPACTION and start:
            return Truncator(" ".join(start.split())).chars(80)
        return content_preview(obj.content, chars=80)

    @admin.display(description="#")
    def position(self, obj: Entry) -> int:
        return obj.seq

    @admin.display(description=_("type, role"))
    def type_role(self, obj: Entry) -> str:
        kind = obj.get_type_display()
        return f"{kind}, {obj.get_role_display()}" if obj.role else str(kind)

    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj: Entry) -> str:
        return date_format(localtime(obj.created_at), "SHORT_DATETIME_FORMAT")

    @admin.display(boolean=True, description=_("redacted"))
    def is_redacted(self, obj: Entry) -> bool:
        return obj.redaction is not None

    @admin.display(description=_("text"))
    def text(self, obj: Entry) -> SafeString:
        text = entry_text(obj) or content_text(obj.content)
        if not text.strip():
            return format_html('<span class="cm-text cm-text--none">{}</span>', "—")
        return format_html('<div class="cm-text">{}</div>', text)

    @admin.display(description=_("summary"))
    def compaction_summary(self, obj: Entry) -> SafeString:
        summary = str(compaction_event(obj).get("summary") or "")
        return format_html('<div class="cm-text cm-text--summary">{}</div>', summary)

    @admin.display(description=_("strategy"))
    def compaction_strategy(self, obj: Entry) -> str:
        return str(compaction_event(obj).get("strategy") or "—")

    @admin.display(description=_("summarizes"))
    def compaction_range(self, obj: Entry) -> SafeString:
        event = compaction_event(obj)
        return format_html(
            gettext("up to {covered}; first kept: {kept}"),
            covered=self._entry_link(event.get("covered_to_entry_id")),
            kept=self._entry_link(event.get("first_kept_entry_id")),
        )

    def _entry_link(self, entry_id: Any) -> SafeString | str:
        if not isinstance(entry_id, str) or not entry_id:
            return "—"
        url = reverse(
            "admin:cogitator_memory_entry_change",
            args=[quote(entry_id)],
            current_app=self.admin_site.name,
        )
        return format_html('<a href="{}">{}</a>', url, entry_id)
