"""Review decisions in the admin: the adapters of the action classes
(``cogitator_memory.review.ReviewAction``).

A model admin whose rows people review derives from ``ReviewAdmin``. Its list actions and
the buttons of a row's page build the decision's action with the staff user and their
grants (``review``) and run it (``decide``); the action checks the permission, the
statuses, the reason, makes the change for every chosen row or none, and writes the
admin log. Here its errors become messages, and on a row's page 404 and 403.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext

from cogitator_memory.access.selectors import grants_for_user
from cogitator_memory.exceptions import (
    CogitatorMemoryError,
    InvalidInput,
    NotFound,
    ReviewRefused,
)
from cogitator_memory.grants import Grants
from cogitator_memory.review import ReviewAction, Via

__all__ = ["ReviewAdmin", "error_text"]


def error_text(exc: CogitatorMemoryError) -> str:
    """What a message says of an error: an invalid input's messages without the field
    names, which mean nothing on the page."""
    if isinstance(exc, InvalidInput):
        return " ".join(message for field in exc.errors.values() for message in field)
    return exc.message


class ReviewAdmin(admin.ModelAdmin):
    """List actions and page buttons that run review decisions."""

    def review(
        self,
        request: HttpRequest,
        decision: type[ReviewAction[Any]],
        *,
        grants: Grants | None = None,
    ) -> ReviewAction[Any]:
        """The decision's action for the staff user, within their grants (read unless
        given)."""
        if grants is None:
            grants = grants_for_user(request.user)
        return decision(request.user, grants=grants, via=Via.ADMIN)

    def may_decide(self, request: HttpRequest, decision: type[ReviewAction[Any]]) -> bool:
        """Whether the staff user holds the decision's permission (an admin action's
        ``has_<name>_permission``)."""
        return decision.holds_permission(request.user)

    def decide(
        self,
        request: HttpRequest,
        decision: type[ReviewAction[Any]],
        ids: list[str],
        reason: str = "",
    ) -> bool:
        """Make the decision on every row of ``ids`` or on none; a message says which."""
        try:
            done = self.review(request, decision).execute(ids, reason=reason)
        except CogitatorMemoryError as exc:
            self.message_user(
                request,
                gettext("Nothing was changed: %(why)s") % {"why": error_text(exc)},
                messages.ERROR,
            )
            return False
        opts = self.opts
        noun = opts.verbose_name if len(done) == 1 else opts.verbose_name_plural
        said = gettext("%(count)d %(noun)s %(done)s") % {
            "count": len(done),
            "noun": noun,
            "done": decision.done,
        }
        if decision.takes_reason:
            said = gettext("%(said)s, because: %(reason)s") % {
                "said": said,
                "reason": decision.clean_reason(reason),
            }
        else:
            said += "."
        self.message_user(request, said, messages.SUCCESS)
        return True

    def chosen_ids(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[str]:
        """The rows a list action was posted for: the whole list with "select all",
        otherwise those ticked, whether or not the list's filter shows them (the action
        decides whether each may take the decision)."""
        if request.POST.get("select_across") == "1":
            return [str(pk) for pk in queryset.values_list("pk", flat=True)]
        return request.POST.getlist(ACTION_CHECKBOX_NAME)

    def decision_view(
        self, request: HttpRequest, object_id: str, decision: type[ReviewAction[Any]]
    ) -> HttpResponse:
        """A decision on one row, posted from its page: 404 for a row the staff user
        cannot see, 403 without the permission; then back to the row's page."""
        row_id = unquote(object_id)
        try:
            self.review(request, decision).authorize([row_id])
        except NotFound as exc:
            raise Http404(exc.message) from exc
        except ReviewRefused as exc:
            raise PermissionDenied(exc.message) from exc
        self.decide(request, decision, [row_id], request.POST.get("reason", ""))
        return HttpResponseRedirect(
            reverse(
                f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
                args=[quote(row_id)],
                current_app=self.admin_site.name,
            )
        )
