"""List filters whose choices cost index lookups, not a scan of the table.

Django's filter of a plain column (``list_filter = ("agent_id",)``) lists its choices
with ``SELECT DISTINCT`` over every row, on each view of the list. These filters read
at most ``choices_limit`` values, one index lookup each, and offer a text box for the
values beyond; ``VisibleAgentFilter`` offers a staff user the agents of their grants
without reading the table at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db import connections, models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from cogitator_memory.access.selectors import grants_for_user

if TYPE_CHECKING:
    from django.contrib.admin.views.main import ChangeList

__all__ = ["AgentFilter", "IndexedValuesFilter", "VisibleAgentFilter", "first_distinct_values"]


def first_distinct_values(model: type[models.Model], field_name: str, *, limit: int) -> list[str]:
    """The ``limit`` smallest distinct values of a column, in order, NULL left out.

    Read as a loose index scan: a recursive query asks for the smallest value above the
    one before, so the cost is one index lookup per value returned, whatever the number of
    rows. The column must lead an index, or each lookup reads the table.
    """
    connection = connections[model._default_manager.db]
    quote = connection.ops.quote_name
    field = model._meta.get_field(field_name)
    if not isinstance(field, models.Field) or not field.column:
        raise ValueError(f"{field_name!r} is not a column of {model.__name__}.")
    table = quote(model._meta.db_table)
    column = quote(field.column)
    sql = (
        f"WITH RECURSIVE found (value, position) AS ("
        f" SELECT MIN({column}), 1 FROM {table}"
        f" UNION ALL"
        f" SELECT (SELECT MIN({column}) FROM {table} WHERE {column} > found.value),"
        f" found.position + 1"
        f" FROM found WHERE found.value IS NOT NULL AND found.position < %s"
        f") SELECT value FROM found WHERE value IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [limit])
        return [row[0] for row in cursor.fetchall()]


class IndexedValuesFilter(admin.SimpleListFilter):
    """A filter on the column named by ``parameter_name``, whose choices are its first
    ``choices_limit`` values (``first_distinct_values``). When there are more, or the
    chosen value is not among them, a text box below the choices takes any value."""

    template = "admin/cogitator_memory/indexed_values_filter.html"
    # Choices listed; each costs one index lookup per view of the list.
    choices_limit = 50

    # Set by lookups(): whether values past the listed ones exist.
    more_values = False
    # Set by choices(): the other parameters of the list, kept by the text box's form.
    kept_parameters: list[tuple[str, str]] = []

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        values = self.available_values(request, model_admin)
        self.more_values = len(values) > self.choices_limit
        return [(value, value) for value in values[: self.choices_limit]]

    def available_values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        """Up to ``choices_limit + 1`` values to offer, in order (one more tells whether
        there are more than the limit)."""
        return first_distinct_values(
            model_admin.model, str(self.parameter_name), limit=self.choices_limit + 1
        )

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(**{str(self.parameter_name): value})

    def choices(self, changelist: ChangeList) -> Any:
        self.kept_parameters = [
            (name, value)
            for name, value in changelist.params.items()
            if name != self.parameter_name
        ]
        return super().choices(changelist)

    @property
    def offers_text_input(self) -> bool:
        value = self.value()
        listed = any(choice == value for choice, _title in self.lookup_choices)
        return self.more_values or (value is not None and not listed)


class AgentFilter(IndexedValuesFilter):
    """The agents of rows nobody is scoped on (grants): the first values of the column."""

    title = _("agent id")
    parameter_name = "agent_id"


class VisibleAgentFilter(AgentFilter):
    """The agents a user may see: for a staff user the agents of their grants, with no
    query of the table; for a superuser the first agents of the table."""

    def available_values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        grants = grants_for_user(request.user)
        if grants.agent_ids is None:
            return super().available_values(request, model_admin)
        return sorted(grants.agent_ids)[: self.choices_limit + 1]
