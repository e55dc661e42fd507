"""Review decisions: what a person decides about rows a model wrote, one action class each.

A decision (activate an item, reject it, let it go; later, promote a playbook draft) is
a subclass of ``ReviewAction`` that owns everything the decision is:

- the permission it takes (``<app_label>.<name>_<model_name>``) and its check for a user,
- the refusal of API keys: reviews are made by people,
- the statuses it applies to (``statuses``, the one place they are listed),
- the service call that makes it (``transition``), with the caller's grants, for every
  chosen row or none,
- the reason it needs, if any (``takes_reason``),
- its entry in the admin log (one ``LogEntry`` per row, saying the decision, its reason
  and whether it came through the admin or the API).

The admin's list actions and buttons and the API's views build one with the request's
user and grants and call ``execute``, so every way in behaves alike, as Wagtail's admin
views and API run the same action (``wagtail/actions/base.py``). Errors are the typed
exceptions the API maps to statuses and the admin turns into messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, ClassVar, Generic, TypeVar, cast

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import models, transaction

from cogitator_memory.exceptions import (
    InvalidInput,
    NotFound,
    NotReviewable,
    ReviewRefused,
)
from cogitator_memory.grants import Grants
from cogitator_memory.jsondata import storable_text, text_problem

__all__ = ["ReviewAction", "Via"]

M = TypeVar("M", bound=models.Model)


class Via(StrEnum):
    """Where a review came from, as the admin log says it."""

    ADMIN = "admin"
    API = "API"


class ReviewAction(Generic[M]):
    """One review decision on rows of ``model``, made by ``user`` within ``grants``.

    A subclass sets ``name`` (``"activate"``: it names the permission), ``done`` (what
    the log says: ``"activated"``), ``model``, ``statuses``, and the exceptions to raise
    (``not_found``, ``not_reviewable``, ``invalid``), and implements ``transition``.
    ``api_key`` is the API key a request authenticated with, if any: it is refused.
    """

    name: ClassVar[str]
    done: ClassVar[str]
    model: ClassVar[type[models.Model]]
    statuses: ClassVar[tuple[str, ...]]
    # Set from name and model: "cogitator_memory.activate_memoryitem".
    permission: ClassVar[str]
    status_field: ClassVar[str] = "status"
    # Whether the decision needs a reason (a non-empty text of at most max_reason).
    takes_reason: ClassVar[bool] = False
    max_reason: ClassVar[int] = 1000
    # Raised with the id of a row the caller cannot see.
    not_found: ClassVar[type[NotFound]]
    not_reviewable: ClassVar[type[NotReviewable]] = NotReviewable
    invalid: ClassVar[type[InvalidInput]] = InvalidInput

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if hasattr(cls, "name") and hasattr(cls, "model"):
            opts = cls.model._meta
            cls.permission = f"{opts.app_label}.{cls.name}_{opts.model_name}"

    def __init__(
        self, user: Any, *, grants: Grants, via: Via, api_key: object | None = None
    ) -> None:
        self.user = user
        self.grants = grants
        self.via = via
        self.api_key = api_key

    @classmethod
    def label(cls) -> str:
        """The decision in words: ``"let go"`` for ``let_go``."""
        return cls.name.replace("_", " ")

    # --- who may decide ------------------------------------------------------------------

    @classmethod
    def holds_permission(cls, user: Any) -> bool:
        """Whether ``user`` is an active person holding the decision's permission (an
        active superuser holds every one)."""
        return bool(
            user is not None
            and getattr(user, "is_authenticated", False)
            and getattr(user, "is_active", False)
            and user.has_perm(cls.permission)
        )

    def user_has_permission(self) -> bool:
        """Whether the action's user holds the decision's permission."""
        return self.holds_permission(self.user)

    def check(self) -> None:
        """Raise ``ReviewRefused`` unless the caller may make the decision: never an API
        key, only a user holding the permission."""
        plural = self.model._meta.verbose_name_plural
        if self.api_key is not None:
            raise ReviewRefused(
                f"Reviews are made by people: an API key cannot {self.label()} {plural}.",
                permission=self.permission,
            )
        if not self.user_has_permission():
            raise ReviewRefused(
                f"You need the permission {self.permission} to {self.label()} {plural}.",
                permission=self.permission,
            )

    def applies_to(self, row: M) -> bool:
        """Whether the row's status takes the decision."""
        return getattr(row, self.status_field) in self.statuses

    def allowed_on(self, row: M) -> bool:
        """Whether the caller may make the decision on this row now (for showing a
        button): a person with the permission, the row in one of ``statuses``."""
        return self.api_key is None and self.user_has_permission() and self.applies_to(row)

    @classmethod
    def clean_reason(cls, reason: object) -> str:
        """The reason, stripped, when the decision takes one (``""`` otherwise). Raises
        ``invalid`` on ``reason`` when it is missing, blank, too long or not text."""
        if not cls.takes_reason:
            return ""
        if (
            not isinstance(reason, str)
            or not reason.strip()
            or text_problem(reason)
            or len(reason.strip()) > cls.max_reason
        ):
            raise cls.invalid(
                {
                    "reason": f"Give the reason, a non-empty text of at most "
                    f"{cls.max_reason} characters."
                }
            )
        return reason.strip()

    # --- the rows --------------------------------------------------------------------------

    def queryset(self) -> models.QuerySet[M]:
        """The rows the caller's grants reach."""
        manager = cast(Any, self.model._default_manager)
        return cast("models.QuerySet[M]", manager.visible_to(self.grants))

    def rows(self, ids: Iterable[str]) -> list[M]:
        """The rows of ``ids``, in their order. Raises ``not_found`` for the first id no
        row the caller may see has."""
        wanted = list(dict.fromkeys(ids))
        longest = self.model._meta.pk.max_length or 0
        # An id no row can have is not looked up (PostgreSQL refuses NUL in text).
        lookable = [i for i in wanted if isinstance(i, str) and storable_text(i)]
        lookable = [i for i in lookable if not longest or len(i) <= longest]
        found = {row.pk: row for row in self.queryset().filter(pk__in=lookable)}
        for row_id in wanted:
            if row_id not in found:
                raise self.not_found(str(row_id))
        return [found[row_id] for row_id in wanted]

    def authorize(self, ids: Iterable[str]) -> list[M]:
        """The rows of ``ids`` once the caller may decide on them: ``not_found`` for a row
        they cannot see (before any permission, so ids cannot be probed), then
        ``ReviewRefused``."""
        rows = self.rows(ids)
        self.check()
        return rows

    def refuse_unless_applicable(self, rows: Sequence[M]) -> None:
        """Raise ``not_reviewable`` naming every row whose status does not take the
        decision."""
        refused = [row for row in rows if not self.applies_to(row)]
        if refused:
            raise self.refusal(refused)

    def refusal(self, rows: Sequence[M]) -> NotReviewable:
        """The ``not_reviewable`` error naming these rows and their statuses."""
        statuses = {str(row.pk): str(getattr(row, self.status_field)) for row in rows}
        return self.not_reviewable(statuses, self.label(), self.statuses)

    # --- the decision ------------------------------------------------------------------

    def transition(self, ids: list[str], reason: str) -> list[str]:
        """The service call: change the rows of ``ids`` that are still in one of
        ``statuses`` (within ``self.grants``) and return the ids changed."""
        raise NotImplementedError

    def execute(self, ids: Iterable[str], *, reason: str = "") -> list[M]:
        """Make the decision on every row of ``ids`` or on none, log it, and return the
        rows as they now stand.

        Raises ``not_found`` (a row the caller cannot see), ``ReviewRefused`` (an API
        key, a user without the permission), ``invalid`` (a missing reason), and
        ``not_reviewable`` naming every row whose status does not take the decision,
        also when another change got there first; then nothing has changed."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        with transaction.atomic():
            rows = self.authorize(wanted)
            note = self.clean_reason(reason)
            self.refuse_unless_applicable(rows)
            changed = set(self.transition(wanted, note))
            if changed != set(wanted):
                # Another change came between the read above and the transition's lock;
                # raising here rolls back the rows this one changed.
                raise self.refusal(self.rows(i for i in wanted if i not in changed))
            done = self.rows(wanted)
            self.log(done, note)
        return done

    def log_message(self, reason: str) -> str:
        """What the admin log says: ``"rejected: wrong city (API)"``."""
        said = f"{self.done}: {reason}" if reason else self.done
        return f"{said} ({self.via})"

    def log(self, rows: Sequence[M], reason: str) -> None:
        """One admin log entry per row, by the user."""
        LogEntry.objects.log_actions(
            user_id=self.user.pk,
            queryset=list(rows),
            action_flag=CHANGE,
            change_message=self.log_message(reason),
            single_object=False,
        )
