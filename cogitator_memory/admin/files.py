"""The memory file browser: the files that stand, per agent and scope, in the admin.

The list shows the heads (one row per scope and path, the newest version), filterable
by agent, scope, user and path, the files that stand by default. A file's page shows its
versions (sequence, path, author, when, size, sha256, renamed from, redaction), back
through renames, and the diff between any two of them chosen on the page (``difflib``,
unified or side by side). Redaction is the only change made here: a ``MemoryFiles.redact``
call behind its own permission (``redact_memoryfileversion``), confirmed on a page of its
own and written to the admin log. Versions are never edited or deleted by hand.

A staff user sees only the agents (and users) of their grants; every text a model wrote
(paths, contents, reasons) is escaped by the templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Func, IntegerField, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.admin.file_diff import FileDiff, diff_texts
from cogitator_memory.admin.filters import VisibleAgentFilter
from cogitator_memory.admin.records import GrantScopedAdmin, ReadOnlyAdmin
from cogitator_memory.admin.scale import LargeTableAdmin
from cogitator_memory.exceptions import CogitatorMemoryError, InvalidMemoryPath
from cogitator_memory.files.access import FileAccess
from cogitator_memory.files.models import Author, MemoryFileHead, MemoryFileVersion
from cogitator_memory.files.paths import normalize
from cogitator_memory.files.querysets import FileHeadQuerySet
from cogitator_memory.files.services import MemoryFiles
from cogitator_memory.grants import MemoryScope

__all__ = ["MemoryFileHeadAdmin"]

MAX_REASON = 1000
SPLIT, UNIFIED = "split", "unified"
REDACT_PERMISSION = "cogitator_memory.redact_memoryfileversion"


class ByteLength(Func):
    """The size of a text column in bytes (UTF-8), read in the database so a listing of
    versions does not fetch their content: NULL for NULL (a deletion)."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra
        )


# --- the list's filters ---------------------------------------------------------------------


class FileStateFilter(admin.SimpleListFilter):
    """The files that stand by default; deleted ones (whose history stays) on request."""

    title = _("state")
    parameter_name = "state"
    standing, deleted, every = "standing", "deleted", "all"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            (self.standing, _("standing")),
            (self.deleted, _("deleted")),
            (self.every, _("every state")),
        ]

    def choices(self, changelist: Any) -> Any:
        current = self.value() or self.standing
        for lookup, title in self.lookup_choices:
            yield {
                "selected": current == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value() or self.standing
        if value == self.every:
            return queryset
        return queryset.filter(deleted=value == self.deleted)


class ScopeKindFilter(admin.SimpleListFilter):
    """Which limits a file's scope has: none (every user of the agent sees it), a user, a
    project or a thread. Fixed choices: no query for them."""

    title = _("scope")
    parameter_name = "scope"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("agent", _("the whole agent")),
            ("user", _("a user")),
            ("project", _("a project")),
            ("thread", _("a thread")),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "agent":
            return queryset.filter(
                user_id__isnull=True, project_id__isnull=True, thread_id__isnull=True
            )
        if value in ("user", "project", "thread"):
            return queryset.filter(**{f"{value}_id__isnull": False})
        return queryset


class TextFilter(admin.SimpleListFilter):
    """A filter with no listed choices, only a text box (``placeholder`` says what it
    takes), so listing it costs no query."""

    template = "admin/cogitator_memory/text_filter.html"
    placeholder: Any = ""
    kept_parameters: list[tuple[str, str]] = []

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return []

    def has_output(self) -> bool:
        return True

    def choices(self, changelist: Any) -> Any:
        self.kept_parameters = [
            (name, value)
            for name, value in changelist.params.items()
            if name != self.parameter_name
        ]
        return super().choices(changelist)


class UserIdFilter(TextFilter):
    title = _("user id")
    parameter_name = "user_id"
    placeholder = _("A user id")

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if not value else queryset.filter(user_id=value)


class PathFilter(TextFilter):
    """A path and everything under it (an exact prefix: ``%`` and ``_`` match themselves);
    with an agent chosen it reads the (agent, path) index. The path is read by the rule of
    memory paths (``files.paths.normalize``, as the memory tool and the API read it: a
    composed accent finds the file a combining one wrote); one it refuses lists nothing,
    and says why."""

    title = _("path")
    parameter_name = "path"
    placeholder = _("/memories/… and what is under it")

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        assert isinstance(queryset, FileHeadQuerySet)
        try:
            directory = normalize(value)
        except InvalidMemoryPath as refusal:
            messages.error(request, refusal.message)
            return queryset.none()
        return queryset.at_or_under(directory)


# --- a file's page ------------------------------------------------------------------------


@dataclass(frozen=True)
class VersionRow:
    """What the file page shows of one version."""

    version: MemoryFileVersion
    size: int | None  # bytes of the content as it is now; None for a deletion

    @property
    def deleted(self) -> bool:
        return self.size is None


@dataclass(frozen=True)
class Comparison:
    old: VersionRow
    new: VersionRow
    diff: FileDiff


@admin.register(MemoryFileHead)
class MemoryFileHeadAdmin(GrantScopedAdmin, ReadOnlyAdmin, LargeTableAdmin):
    list_display = (
        "path",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
        "sequence",
        "size",
        "deleted",
        "updated_at",
    )
    list_filter = (VisibleAgentFilter, FileStateFilter, ScopeKindFilter, UserIdFilter, PathFilter)
    # Served by cm_file_head_agent_path; no other column is sorted (sortable_by is empty).
    ordering = ("agent_id", "path")
    sortable_by = ()
    actions = ()
    fieldsets = (
        (None, {"fields": ("path", ("sequence", "deleted", "size"), "updated_at")}),
        (_("Grants"), {"fields": (("agent_id", "user_id"), ("project_id", "thread_id"))}),
        (_("Record"), {"classes": ("collapse",), "fields": ("version", "place_thread_id")}),
    )
    readonly_fields = (
        "path",
        "sequence",
        "deleted",
        "size",
        "updated_at",
        "agent_id",
        "user_id",
        "project_id",
        "thread_id",
        "version",
        "place_thread_id",
    )

    class Media:
        css = {"all": ["cogitator_memory/files.css"]}

    # --- what a staff user sees and may do ---------------------------------------------

    # The rows: those the staff user's grants reach (GrantScopedAdmin). Read-only
    # (ReadOnlyAdmin): files change through the memory tool, the API or redaction, never
    # by hand.

    def has_redact_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm(REDACT_PERMISSION))

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = {"title": gettext("Memory files"), **(extra_context or {})}
        return super().changelist_view(request, context)

    def _access(self, request: HttpRequest, head: MemoryFileHead) -> FileAccess:
        """The file's own scope, as the staff user (their grants narrow the service)."""
        return FileAccess(
            scope=MemoryScope.of(head), grants=grants_for_user(request.user), author=Author.USER
        )

    # --- the versions and their diff ---------------------------------------------------

    def versions(self, request: HttpRequest, head: MemoryFileHead) -> list[VersionRow]:
        """The file's versions, oldest first, back through renames; those of a scope the
        user's grants do not reach (a wider file this one was made from) left out. The
        content is not read, only its size."""
        grants = grants_for_user(request.user)
        chain = [
            version
            for version in MemoryFiles().history(
                self._access(request, head), head.path, with_content=False
            )
            if grants.allows(version.agent_id, version.user_id)
        ]
        sizes = dict(
            MemoryFileVersion.objects.filter(pk__in=[version.pk for version in chain])
            .annotate(bytes=ByteLength("content"))
            .values_list("pk", "bytes")
        )
        return [VersionRow(version, sizes.get(version.pk)) for version in chain]

    def comparison(self, request: HttpRequest, rows: list[VersionRow]) -> Comparison | None:
        """The two versions chosen (``from`` and ``to``, version ids among ``rows``), by
        default the one before the newest and the newest, with their diff."""
        if not rows:
            return None
        by_id = {row.version.pk: row for row in rows}
        new = by_id.get(request.GET.get("to", "")) or rows[-1]
        fallback = rows[-2] if len(rows) > 1 else None
        old = by_id.get(request.GET.get("from", "")) or fallback
        if old is None:
            return None
        contents = dict(
            MemoryFileVersion.objects.filter(pk__in=[old.version.pk, new.version.pk]).values_list(
                "pk", "content"
            )
        )
        diff = diff_texts(contents.get(old.version.pk), contents.get(new.version.pk))
        return Comparison(old=old, new=new, diff=diff)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        head = self.get_object(request, unquote(object_id))
        context = dict(extra_context or {})
        if head is not None:
            try:
                rows = self.versions(request, head)
            except CogitatorMemoryError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                rows = []
            view = request.GET.get("view")
            context.update(
                title=gettext("Memory file"),
                subtitle=head.path,
                versions=rows,
                comparison=self.comparison(request, rows),
                diff_view=view if view in (SPLIT, UNIFIED) else SPLIT,
                may_redact=self.has_redact_permission(request),
                redacted_everywhere=bool(rows)
                and all(row.version.is_redacted or row.deleted for row in rows),
            )
        return super().change_view(request, object_id, form_url, context)

    # --- redaction -----------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<path:object_id>/redact/",
                self.admin_site.admin_view(self.redact_view),
                name=f"{self.opts.app_label}_{self.opts.model_name}_redact",
            )
        ]
        return own + super().get_urls()

    def _page_of(self, head: MemoryFileHead) -> str:
        return reverse(
            f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
            args=[quote(head.pk)],
            current_app=self.admin_site.name,
        )

    def redact_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirm (GET, or a POST without ``confirmed``), then redact every version of the
        file: its permission first, then the file among those the user sees."""
        if not self.has_redact_permission(request):
            raise PermissionDenied
        head = self.get_object(request, unquote(object_id))
        if head is None:
            raise Http404(gettext("No memory file with this id."))
        reason = request.POST.get("reason", "").strip()[:MAX_REASON]
        every_scope = request.POST.get("every_scope") == "yes"
        if request.method == "POST" and request.POST.get("confirmed") == "yes":
            try:
                count = MemoryFiles().redact(
                    self._access(request, head),
                    [head.path],
                    reason or None,
                    every_scope=every_scope,
                )
            except CogitatorMemoryError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return HttpResponseRedirect(self._page_of(head))
            done = ngettext(
                "redacted %(count)d version%(where)s",
                "redacted %(count)d versions%(where)s",
                count,
            ) % {
                "count": count,
                "where": gettext(" in every scope of the agent") if every_scope else "",
            }
            if reason:
                done = f"{done}: {reason}"
            self.log_change(request, head, done)
            self.message_user(request, f"{head.path}: {done}.", messages.SUCCESS)
            return HttpResponseRedirect(self._page_of(head))
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Redact a memory file"),
            "opts": self.opts,
            "original": head,
            "scope": MemoryScope.of(head),
            "file_url": self._page_of(head),
            "reason": reason,
        }
        return TemplateResponse(
            request, "admin/cogitator_memory/memoryfilehead/redact.html", context
        )
