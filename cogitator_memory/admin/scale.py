"""List pages that stay fast on tables of millions of rows.

Django's change list counts every row of the list on each page view (twice when the list
is filtered: the filtered list and the whole table) and offers facet counts per filter
choice. On a table of millions of rows each of those reads the whole table. Every list
page of this app derives from ``LargeTableAdmin``, which turns them off and pages with
``LargeTablePaginator``: rows are counted only up to a limit, and past it the page says
"about N" (PostgreSQL's estimate of an unfiltered table) or "more than N".

The other costs of a list page are the filters' choices and the date drill-down, which
``filters`` and ``date_hierarchy`` keep to index lookups, and the sort order: each list
allows sorting only by columns an index serves (``sortable_by``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any, NamedTuple

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.core.paginator import EmptyPage, Page, Paginator
from django.db import connections
from django.db.models import QuerySet
from django.http import HttpRequest

__all__ = [
    "LargeTableAdmin",
    "LargeTableChangeList",
    "LargeTablePaginator",
    "estimated_row_count",
]


def estimated_row_count(queryset: QuerySet[Any]) -> int | None:
    """The database's estimate of how many rows ``queryset`` holds, when it has a cheap
    one: on PostgreSQL, for a queryset of the whole table, the table's ``reltuples``
    (kept by ANALYZE and autovacuum). None for a filtered queryset, a table never
    analyzed, and on SQLite, which keeps no row count short of counting."""
    query = queryset.query
    if query.where or query.is_sliced or query.combinator or query.distinct:
        return None
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    table = connection.ops.quote_name(queryset.model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)", [table])
        row = cursor.fetchone()
    # -1 until the table is first vacuumed or analyzed.
    if row is None or row[0] is None or row[0] < 0:
        return None
    return round(row[0])


class Tally(NamedTuple):
    rows: int
    exact: bool
    estimate: int | None


class LargeTablePaginator(Paginator):
    """Pages of a list of any length, counting at most ``count_limit`` rows.

    A list of up to ``count_limit`` rows is counted exactly and paged as Django pages it.
    Past that, counting would read every row of the list on each page view; the count
    is then PostgreSQL's estimate for an unfiltered table (``count_estimate``, shown as
    "about N") or unknown (shown as "more than ``count_limit``"), and ``counted_exactly``
    is False. Each page then reads one row past its end to know whether another page
    follows, and a page number is valid until its page comes back empty.

    Uncounted pages hold lists, not querysets, so a list page using this paginator
    cannot be edited in place (``list_editable``).
    """

    # Rows counted exactly. Counting stops at this many plus one: on a long list it reads
    # 1,001 rows, on a short one what finding the page's own rows reads anyway.
    count_limit = 1000

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._next_page_exists: dict[int, bool] = {}

    @cached_property
    def _tally(self) -> Tally:
        if not isinstance(self.object_list, QuerySet):
            return Tally(len(self.object_list), True, None)
        limit = max(self.count_limit, self.per_page)
        counted = self.object_list.order_by()[: limit + 1].count()
        if counted <= limit:
            return Tally(counted, True, None)
        estimate = estimated_row_count(self.object_list)
        if estimate is not None and estimate <= limit:
            # An estimate older than the rows counted says nothing.
            estimate = None
        return Tally(estimate or counted, False, estimate)

    @cached_property
    def count(self) -> int:
        """The number of rows when counted exactly; otherwise the estimate, or one more
        than ``count_limit``."""
        return self._tally.rows

    @property
    def counted_exactly(self) -> bool:
        return self._tally.exact

    @property
    def count_estimate(self) -> int | None:
        return self._tally.estimate

    def validate_number(self, number: Any) -> int:
        try:
            return int(super().validate_number(number))
        except EmptyPage:
            # Past the last page of an estimate: whether the page holds rows is known
            # only once it is read.
            if self.counted_exactly or int(number) < 1:
                raise
            return int(number)

    def page(self, number: Any) -> Page:
        if self.counted_exactly:
            return super().page(number)
        number = self.validate_number(number)
        start = (number - 1) * self.per_page
        rows = list(self.object_list[start : start + self.per_page + 1])
        if not rows and number > 1:
            raise EmptyPage(self.error_messages["no_results"])
        self._next_page_exists[number] = len(rows) > self.per_page
        return UncountedPage(rows[: self.per_page], number, self)

    def next_page_exists(self, number: int) -> bool:
        """Whether a page follows page ``number`` (read with that page)."""
        if self.counted_exactly:
            return number < self.num_pages
        return self._next_page_exists.get(number, False)

    def get_elided_page_range(
        self, number: Any = 1, *, on_each_side: int = 3, on_ends: int = 2
    ) -> Iterator[Any]:
        """Django's page range when counted exactly. Otherwise the pages up to the one
        after ``number`` (when there is one) and an ellipsis for those beyond; the last
        page is never offered, as it is not known."""
        if self.counted_exactly:
            yield from super().get_elided_page_range(
                number, on_each_side=on_each_side, on_ends=on_ends
            )
            return
        number = self.validate_number(number)
        if number > on_ends + on_each_side + 1:
            yield from range(1, on_ends + 1)
            yield self.ELLIPSIS
            yield from range(number - on_each_side, number + 1)
        else:
            yield from range(1, number + 1)
        if self.next_page_exists(number):
            yield number + 1
            yield self.ELLIPSIS


class UncountedPage(Page):
    """A page of a list not counted to its end: what follows it was read with it."""

    paginator: LargeTablePaginator
    object_list: Sequence[Any]

    def has_next(self) -> bool:
        return self.paginator.next_page_exists(self.number)

    def end_index(self) -> int:
        return self.start_index() + len(self.object_list) - 1


class LargeTableChangeList(ChangeList):
    """A change list sorted only by the columns of ``sortable_by``. Django leaves the
    other column headers unlinked but still sorts by any column a URL names (``?o=4``),
    which on a column no index serves sorts the whole table."""

    def get_ordering_field(self, field_name: Any) -> Any:
        if self.sortable_by is not None and field_name not in self.sortable_by:
            return None
        return super().get_ordering_field(field_name)


class LargeTableAdmin(admin.ModelAdmin):
    """The list page settings every model admin of this app shares: counts bounded by
    ``LargeTablePaginator``, no count of the whole table beside a filtered list, no
    facet counts (one COUNT per filter choice, over the whole list, on each view), and
    sorting by the ``sortable_by`` columns only (``LargeTableChangeList``), which each
    admin sets to the columns its indexes serve.

    Its templates (``admin/cogitator_memory/change_list.html`` and the pagination,
    search and action bars beside it) say "about N" or "more than N" where the count
    was not exact, and draw the date drill-down from index lookups."""

    paginator = LargeTablePaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return LargeTableChangeList
