"""Intervals of a speaker's calendar: what a resolved time expression is.

A ``ResolvedTime`` is ``[start, end)`` in UTC with its precision. The builders here lay
calendar units out in a zone: a day runs from local midnight to local midnight (23 or 25
hours across a DST change), a week from Monday (ISO 8601), a month, quarter or year from its
first day; an hour, minute or second of the local clock lasts exactly that long.
``cogitator_memory.items.timing`` reads time words into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Final

from django.db import models
from django.utils.translation import gettext_lazy as _

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo


class TimePrecision(models.TextChoices):
    """How much of the calendar an expression names, from the narrowest."""

    SECOND = "second", _("second")
    MINUTE = "minute", _("minute")
    HOUR = "hour", _("hour")
    PART_OF_DAY = "part_of_day", _("part of day")
    DAY = "day", _("day")
    WEEKEND = "weekend", _("weekend")
    WEEK = "week", _("week")
    MONTH = "month", _("month")
    SEASON = "season", _("season")
    QUARTER = "quarter", _("quarter")
    YEAR = "year", _("year")


@dataclass(frozen=True, slots=True)
class ResolvedTime:
    """The interval an expression names: ``start`` included, ``end`` excluded, both aware
    datetimes in UTC (``start.astimezone(ZoneInfo(time_zone))`` shows the speaker's time)."""

    start: datetime
    end: datetime
    precision: TimePrecision


CLOCK_UNITS: Final = {
    TimePrecision.SECOND: timedelta(seconds=1),
    TimePrecision.MINUTE: timedelta(minutes=1),
    TimePrecision.HOUR: timedelta(hours=1),
}

# Hours from the day's midnight, end excluded: the night runs into the next morning. The
# names are dateparser's PartOfDay values.
PARTS_OF_DAY: Final = {
    "early_morning": (0, 6),
    "morning": (6, 12),
    "afternoon": (12, 18),
    "evening": (18, 24),
    "night": (18, 30),
}


def wall_to_utc(wall: datetime, zone: ZoneInfo) -> datetime:
    """A naive wall time of ``zone``, in UTC. A wall time a DST change skips or repeats is
    read with the offset in force before the change (fold=0)."""
    return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)


def days_interval(first: date, end: date, zone: ZoneInfo, precision: TimePrecision) -> ResolvedTime:
    """From the local midnight that starts ``first`` to the one that starts ``end``."""
    return ResolvedTime(
        wall_to_utc(datetime.combine(first, time()), zone),
        wall_to_utc(datetime.combine(end, time()), zone),
        precision,
    )


def day_interval(day: date, zone: ZoneInfo) -> ResolvedTime:
    return days_interval(day, day + timedelta(days=1), zone, TimePrecision.DAY)


def week_interval(day: date, zone: ZoneInfo) -> ResolvedTime:
    """The week, Monday to Monday, holding ``day``."""
    monday = day - timedelta(days=day.weekday())
    return days_interval(monday, monday + timedelta(days=7), zone, TimePrecision.WEEK)


def months_interval(
    year: int, month: int, count: int, zone: ZoneInfo, precision: TimePrecision
) -> ResolvedTime:
    """``count`` months from the first day of ``month``. Raises ``ValueError`` past year
    9999."""
    after = month - 1 + count
    end = date(year + after // 12, after % 12 + 1, 1)
    return days_interval(date(year, month, 1), end, zone, precision)


def calendar_interval(day: date, precision: TimePrecision, zone: ZoneInfo) -> ResolvedTime:
    """The day, week, month, quarter or year holding ``day``."""
    if precision == TimePrecision.DAY:
        return day_interval(day, zone)
    if precision == TimePrecision.WEEK:
        return week_interval(day, zone)
    if precision == TimePrecision.MONTH:
        return months_interval(day.year, day.month, 1, zone, precision)
    if precision == TimePrecision.QUARTER:
        return months_interval(day.year, (day.month - 1) // 3 * 3 + 1, 3, zone, precision)
    if precision == TimePrecision.YEAR:
        return months_interval(day.year, 1, 12, zone, precision)
    raise ValueError(f"Not a calendar unit: {precision!r}")


def part_of_day_interval(day: date, part: str, zone: ZoneInfo) -> ResolvedTime:
    """One of ``PARTS_OF_DAY`` of ``day``, by the local clock."""
    first_hour, end_hour = PARTS_OF_DAY[part]
    midnight = datetime.combine(day, time())
    return ResolvedTime(
        wall_to_utc(midnight + timedelta(hours=first_hour), zone),
        wall_to_utc(midnight + timedelta(hours=end_hour), zone),
        TimePrecision.PART_OF_DAY,
    )


def clock_interval(moment: datetime, precision: TimePrecision) -> ResolvedTime:
    """The second, minute or hour of the local clock that holds the aware ``moment``, lasting
    exactly that long (a wall hour a DST change repeats is two hours, each one of them)."""
    if precision == TimePrecision.HOUR:
        moment = moment.replace(minute=0, second=0, microsecond=0)
    elif precision == TimePrecision.MINUTE:
        moment = moment.replace(second=0, microsecond=0)
    else:
        moment = moment.replace(microsecond=0)
    start = moment.astimezone(UTC)
    return ResolvedTime(start, start + CLOCK_UNITS[precision], precision)
