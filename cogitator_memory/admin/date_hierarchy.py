"""The date drill-down of a list page (``date_hierarchy``), from index lookups.

Django's drill-down finds the years, months or days that hold rows with ``SELECT
DISTINCT`` over a truncated date: a scan of every row of the list on each view (two
seconds at 200,000 threads on SQLite). This one asks, period after period, for the first
row at or after the start of the next one: one lookup per period that holds rows, plus
one that finds none, each served by an index on the date (alone or after the columns the
list is filtered on). It gives Django's template (``date_hierarchy.html``) the same links.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.admin.utils import get_fields_from_path
from django.db import models
from django.db.models import QuerySet
from django.utils import formats, timezone
from django.utils.text import capfirst
from django.utils.translation import gettext as _

if TYPE_CHECKING:
    from django.contrib.admin.views.main import ChangeList

__all__ = ["date_hierarchy_links"]

YEAR, MONTH, DAY = "year", "month", "day"


def date_hierarchy_links(cl: ChangeList) -> dict[str, Any]:
    """The context of ``date_hierarchy.html`` for the list ``cl``: a link back up, and
    one link per year, month or day of the level shown that holds rows of the list."""
    field_name = cl.date_hierarchy
    field = get_fields_from_path(cl.model, field_name)[-1]
    dates = _Dates(cl.queryset, field_name, isinstance(field, models.DateTimeField))
    year = _number(cl.params.get(f"{field_name}__year"))
    month = _number(cl.params.get(f"{field_name}__month")) if year else None
    day = _number(cl.params.get(f"{field_name}__day")) if month else None

    def link(**parts: int) -> str:
        params = {f"{field_name}__{unit}": value for unit, value in parts.items()}
        return cl.get_query_string(params, [f"{field_name}__"])

    if year is None:
        # Start one level down when every row falls in one year (or month), as Django does.
        first, last = dates.first(), dates.last()
        if first is not None and last is not None and first.year == last.year:
            year = first.year
            month = first.month if first.month == last.month else None
    if year is not None and month is not None and day is not None:
        chosen = date(year, month, day)
        return {
            "show": True,
            "back": {"link": link(year=year, month=month), "title": _year_month(chosen)},
            "choices": [{"title": capfirst(formats.date_format(chosen, "MONTH_DAY_FORMAT"))}],
        }
    if year is not None and month is not None:
        start = date(year, month, 1)
        return {
            "show": True,
            "back": {"link": link(year=year), "title": str(year)},
            "choices": [
                {
                    "link": link(year=year, month=month, day=found.day),
                    "title": capfirst(formats.date_format(found, "MONTH_DAY_FORMAT")),
                }
                for found in dates.periods(DAY, start, _following(MONTH, start))
            ],
        }
    if year is not None:
        start = date(year, 1, 1)
        return {
            "show": True,
            "back": {"link": link(), "title": _("All dates")},
            "choices": [
                {"link": link(year=year, month=found.month), "title": _year_month(found)}
                for found in dates.periods(MONTH, start, _following(YEAR, start))
            ],
        }
    return {
        "show": True,
        "back": None,
        "choices": [
            {"link": link(year=found.year), "title": str(found.year)}
            for found in dates.periods(YEAR, None, None)
        ],
    }


class _Dates:
    """The dates (in the current time zone) of ``field_name`` in ``queryset``, one index
    lookup at a time."""

    def __init__(self, queryset: QuerySet[Any], field_name: str, is_datetime: bool) -> None:
        self.queryset = queryset.filter(**{f"{field_name}__isnull": False})
        self.field_name = field_name
        self.is_datetime = is_datetime

    def first(self, start: date | None = None, end: date | None = None) -> date | None:
        """The date of the earliest row on or after ``start`` and before ``end``."""
        rows = self.queryset
        if start is not None:
            rows = rows.filter(**{f"{self.field_name}__gte": self._moment(start)})
        if end is not None:
            rows = rows.filter(**{f"{self.field_name}__lt": self._moment(end)})
        return self._date(rows.order_by(self.field_name).values_list(self.field_name).first())

    def last(self) -> date | None:
        """The date of the latest row."""
        rows = self.queryset.order_by(f"-{self.field_name}")
        return self._date(rows.values_list(self.field_name).first())

    def periods(self, unit: str, start: date | None, end: date | None) -> list[date]:
        """The first day of each year, month or day (``unit``) from ``start`` to ``end``
        that holds a row: one lookup per period found, and one more."""
        found: list[date] = []
        cursor = start
        while end is None or cursor is None or cursor < end:
            row_date = self.first(cursor, end)
            if row_date is None:
                break
            period = _truncate(unit, row_date)
            found.append(period)
            try:
                cursor = _following(unit, period)
            except (OverflowError, ValueError):  # the last representable period
                break
        return found

    def _moment(self, day: date) -> date | datetime:
        """The value of the field at the start of ``day``, as the admin's date filters
        compute it (midnight in the current time zone)."""
        if not self.is_datetime:
            return day
        moment = datetime.combine(day, time.min)
        return timezone.make_aware(moment) if settings.USE_TZ else moment

    def _date(self, row: tuple[Any] | None) -> date | None:
        if row is None:
            return None
        value = row[0]
        if isinstance(value, datetime):
            return (timezone.localtime(value) if timezone.is_aware(value) else value).date()
        return value


def _number(value: str | None) -> int | None:
    # The change list has checked these numbers already (a bad one is an error page).
    return int(value) if value else None


def _year_month(day: date) -> str:
    return capfirst(formats.date_format(day, "YEAR_MONTH_FORMAT"))


def _truncate(unit: str, day: date) -> date:
    if unit == YEAR:
        return date(day.year, 1, 1)
    if unit == MONTH:
        return date(day.year, day.month, 1)
    return day


def _following(unit: str, period: date) -> date:
    """The first day of the period after ``period`` (a first day of ``unit``)."""
    if unit == YEAR:
        return date(period.year + 1, 1, 1)
    if unit == MONTH:
        return date(period.year + period.month // 12, period.month % 12 + 1, 1)
    return period + timedelta(days=1)
