"""Readers of time words: hand-written rules first, dateparser for the rest.

``read_time_words`` takes a normalized expression (lower case, single spaces) and the
session's local time. The rules read what dateparser reads wrongly or too loosely for
memory: ISO 8601 forms (exact offsets, ISO weeks), bare numbers, numeric dates whose day and
month could be swapped, English dates whose day the month lacks, weekdays, weekends, seasons,
nights, and hours or minutes from now. Everything else, in any language dateparser knows,
goes to dateparser, whose answer (a point and a period) is widened to the interval of that
period.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo

from cogitator_memory.items.intervals import (
    CLOCK_UNITS,
    ResolvedTime,
    TimePrecision,
    calendar_interval,
    clock_interval,
    day_interval,
    days_interval,
    months_interval,
    part_of_day_interval,
    week_interval,
)

logger = logging.getLogger(__name__)

# Before this hour "tonight" is the night under way.
MORNING_STARTS_AT: Final = 6


def _names(*groups: str) -> dict[str, int]:
    """``{"monday": 0, "mon": 0, ...}`` from ``"monday mon", ...``, numbered from 0."""
    return {name: number for number, group in enumerate(groups) for name in group.split()}


_WEEKDAYS: Final = _names(
    "monday mon",
    "tuesday tue tues",
    "wednesday wed",
    "thursday thu thur thurs",
    "friday fri",
    "saturday sat",
    "sunday sun",
)
_MONTHS: Final = {
    name: number + 1
    for name, number in _names(
        "january jan",
        "february feb",
        "march mar",
        "april apr",
        "may",
        "june jun",
        "july jul",
        "august aug",
        "september sep sept",
        "october oct",
        "november nov",
        "december dec",
    ).items()
}
_COUNTS: Final = {"a": 1, "an": 1} | _names(
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
_CLOCK_UNIT_NAMES: Final = {
    "second": TimePrecision.SECOND,
    "sec": TimePrecision.SECOND,
    "minute": TimePrecision.MINUTE,
    "min": TimePrecision.MINUTE,
    "hour": TimePrecision.HOUR,
    "hr": TimePrecision.HOUR,
}


def read_time_words(
    text: str, now: datetime, zone: ZoneInfo, *, english_only: bool = False
) -> ResolvedTime | None:
    """The interval ``text`` names, said at ``now`` (aware, in ``zone``), or ``None``;
    ``english_only`` reads no other language.

    Raises ``ValueError`` or ``OverflowError`` for a date the calendar lacks or cannot hold
    (30 February, year 10000); ``resolve_time`` reads those as unresolved.
    """
    for pattern, rule in _RULES:
        match = pattern.fullmatch(text)
        if match:
            # A rule whose pattern matches has the last word: dateparser is not asked.
            return rule(match, now, zone)
    return _read_with_dateparser(text, now, zone, english_only=english_only)


# --- rules ------------------------------------------------------------------------------------

_Rule = Callable[[re.Match[str], datetime, ZoneInfo], ResolvedTime | None]


def _number(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime | None:
    """A bare number is a year (2026) or an ISO date without dashes (20260304); any other
    (4, 12, -1) would name a day or a month only by guessing."""
    digits = match[0]
    if len(digits) == 4:
        return calendar_interval(date(int(digits), 1, 1), TimePrecision.YEAR, zone)
    if len(digits) == 8:
        return day_interval(date(int(digits[:4]), int(digits[4:6]), int(digits[6:])), zone)
    return None


def _iso_week(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    year, week, weekday = match.groups()
    day = date.fromisocalendar(int(year), int(week), int(weekday or 1))
    return day_interval(day, zone) if weekday else week_interval(day, zone)


def _iso_month(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    return months_interval(int(match[1]), int(match[2]), 1, zone, TimePrecision.MONTH)


def _iso_date(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    """A date, or a date and time as precise as written; a written offset wins over the
    speaker's zone."""
    if match["hour"] is None:
        return day_interval(date.fromisoformat(match["date"]), zone)
    moment = datetime.fromisoformat(match[0].upper())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    if match["second"] is not None:
        return clock_interval(moment, TimePrecision.SECOND)
    if match["minute"] is not None:
        return clock_interval(moment, TimePrecision.MINUTE)
    return clock_interval(moment, TimePrecision.HOUR)


def _numeric_date(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime | None:
    """04/03/2026 is 4 March to some readers and 3 April to others: a numeric date names a
    day only when one of its first two numbers cannot be a month, or both are the same."""
    first, second, year = int(match[1]), int(match[2]), match[3]
    if first != second and first <= 12 and second <= 12:
        return None
    day, month = (second, first) if second > 12 else (first, second)
    full_year = int(year)
    if len(year) == 2:
        # As strptime's %y reads two digits: 69-99 are the 1900s, 00-68 the 2000s.
        full_year += 1900 if full_year >= 69 else 2000
    return day_interval(date(full_year, month, day), zone)


def _ordinal_day(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    """ "the 4th" is a day of the session's month."""
    return day_interval(date(now.year, now.month, int(match[1])), zone)


def _day_month(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    """ "4 March 2026", "March 4th", read here so that a day the month lacks ("31 April") is
    unreadable rather than read as another date; without a year, the session's year."""
    day = int(match["day"] or match["day2"])
    month = _MONTHS[match["month"] or match["month2"]]
    year = match["year"] or match["year2"]
    return day_interval(date(int(year) if year else now.year, month, day), zone)


def _weekday(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime | None:
    """A bare weekday is the nearest day of that name (at most three days away, the
    session's day included); "last" the latest before the session's day, "next" and
    "coming" the first after it, "this" the first from it on."""
    which = match["which"]
    today = now.date()
    ahead = (_WEEKDAYS[match["weekday"]] - today.weekday()) % 7  # the next one, today included
    if which is None:
        offset = ahead if ahead <= 3 else ahead - 7
    elif which in ("last", "past", "this past"):
        offset = ahead - 7
    elif which in ("next", "coming", "this coming"):
        offset = ahead or 7
    else:  # "this"
        offset = ahead
    day = today + timedelta(days=offset)
    if match["time"]:
        return _time_on(day, match["time"], zone)
    if match["part"]:
        return part_of_day_interval(day, match["part"], zone)
    return day_interval(day, zone)


def _weekend(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    """Saturday and Sunday. "this weekend" is the one of the session's week (Monday to
    Sunday), "last" and "past" the week before's, "next" the week after's, "coming" the
    first not yet over. A bare "weekend" is the one under way on a Saturday or a Sunday,
    the one just past from Monday to Wednesday, the one ahead on Thursday and Friday, as
    "over the weekend" is said."""
    which = match["which"]
    today = now.date()
    saturday = today + timedelta(days=5 - today.weekday())  # of the session's week
    if which in ("last", "past", "this past"):
        saturday -= timedelta(days=7)
    elif which == "next":
        saturday += timedelta(days=7)
    elif which is None and today.weekday() <= 2:
        saturday -= timedelta(days=7)
    return days_interval(saturday, saturday + timedelta(days=2), zone, TimePrecision.WEEKEND)


# The first month of each meteorological season in the northern hemisphere; in the southern
# one each season starts six months later.
_SEASONS: Final = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
# Zones south of the equator whose seasons are the northern ones turned round.
_SOUTHERN_ZONES: Final = (
    "Antarctica/",
    "Australia/",
    "Pacific/Auckland",
    "Pacific/Chatham",
    "NZ",
    "America/Argentina/",
    "America/Buenos_Aires",
    "America/Santiago",
    "Chile/",
    "America/Montevideo",
    "America/Asuncion",
    "America/Sao_Paulo",
    "Brazil/East",
    "Africa/Johannesburg",
    "Africa/Maputo",
    "Africa/Windhoek",
    "Africa/Harare",
    "Africa/Gaborone",
    "Africa/Maseru",
    "Africa/Mbabane",
    "Indian/Mauritius",
    "Indian/Reunion",
)


def _season_start(name: str, zone: ZoneInfo) -> int:
    month = _SEASONS[name]
    if str(zone.key).startswith(_SOUTHERN_ZONES):
        month = (month + 5) % 12 + 1
    return month


def _season(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    """A meteorological season: three whole months (in the southern hemisphere, by the
    zone, the months of the other half of the year). "summer 2025" is the one that starts in
    2025 (a winter runs into the next year). "this summer" is the one under way, else the
    one that starts in the session's year; "last" the latest one over; "next" the one
    after this one. A bare season is read as "this"."""
    month = _season_start(match["season"], zone)
    today = now.date()

    def starting_in(year: int) -> tuple[date, date]:
        first = date(year, month, 1)
        after = month - 1 + 3
        return first, date(year + after // 12, after % 12 + 1, 1)

    if match["year"]:
        first, end = starting_in(int(match["year"]))
    else:
        which = match["which"]
        runs = [starting_in(year) for year in (today.year - 2, today.year - 1, today.year)]
        current = next((run for run in runs if run[0] <= today < run[1]), starting_in(today.year))
        if which in ("last", "past", "this past"):
            first, end = [run for run in runs if run[1] <= today][-1]
        elif which == "next":
            first, end = starting_in(current[0].year + 1)
        else:
            first, end = current
    return days_interval(first, end, zone, TimePrecision.SEASON)


def _time_on(day: date, words: str, zone: ZoneInfo) -> ResolvedTime | None:
    """A time of day ("3pm", "15:30") on the day a rule chose; anything else is unreadable."""
    resolved = _read_with_dateparser(words, datetime.combine(day, time(), tzinfo=zone), zone)
    if resolved is None or resolved.precision not in CLOCK_UNITS:
        return None
    return resolved if resolved.start.astimezone(zone).date() == day else None


def _night(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    """ "tonight" before the morning is the night under way; "last night" the one before."""
    night_of = now.date()
    if now.hour < MORNING_STARTS_AT:
        night_of -= timedelta(days=1)
    if match[0] == "last night":
        night_of -= timedelta(days=1)
    return part_of_day_interval(night_of, "night", zone)


def _clock_relative(match: re.Match[str], now: datetime, zone: ZoneInfo) -> ResolvedTime:
    """Hours, minutes and seconds from the session count elapsed time, not the wall clock,
    so "an hour ago" is an hour ago across a DST change too."""
    if match["now"]:
        return clock_interval(now, TimePrecision.MINUTE)
    count, unit = match["count"] or match["count2"], match["unit"] or match["unit2"]
    precision = _CLOCK_UNIT_NAMES[unit]
    step = CLOCK_UNITS[precision] * (_COUNTS[count] if count in _COUNTS else int(count))
    if match["count"]:  # "... ago"
        step = -step
    return clock_interval((now.astimezone(UTC) + step).astimezone(zone), precision)


def _choice(names: Iterable[str]) -> str:
    return "|".join(sorted(names, key=len, reverse=True))


_COUNT = rf"\d{{1,6}}|{_choice(_COUNTS)}"
_CLOCK_UNIT = _choice(_CLOCK_UNIT_NAMES)
_MONTH = _choice(_MONTHS)

_RULES: Final[tuple[tuple[re.Pattern[str], _Rule], ...]] = (
    (re.compile(r"[+-]?\d+"), _number),
    (re.compile(r"(\d{4})-?w(\d{2})(?:-?([1-7]))?"), _iso_week),
    (re.compile(r"(\d{4})-(\d{2})"), _iso_month),
    (
        re.compile(
            r"(?P<date>\d{4}-\d{2}-\d{2})"
            r"(?:[t ](?P<hour>\d{2})(?::(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,]\d+)?)?)?"
            r"(?:z|[+-]\d{2}(?::?\d{2})?)?)?"
        ),
        _iso_date,
    ),
    (re.compile(r"(\d{1,2})[/.-](\d{1,2})[/.-](\d{4}|\d{2})"), _numeric_date),
    (re.compile(r"(?:on )?(?:the )?(\d{1,2})(?:st|nd|rd|th)"), _ordinal_day),
    (
        re.compile(
            rf"(?:on )?(?:the )?(?P<day>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<month>{_MONTH})"
            r"\.?(?:,? (?P<year>\d{4}))?"
            rf"|(?:on )?(?P<month2>{_MONTH})\.? (?:the )?(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?"
            r"(?:,? (?P<year2>\d{4}))?"
        ),
        _day_month,
    ),
    (
        re.compile(
            r"(?:on )?(?:(?P<which>this coming|this past|coming|past|this|last|next) )?"
            rf"(?P<weekday>{_choice(_WEEKDAYS)})\.?"
            r"(?: (?P<part>morning|afternoon|evening|night))?(?: at (?P<time>.+))?"
        ),
        _weekday,
    ),
    (
        re.compile(
            r"(?:(?:on|over|during|at|for|in) )?(?:the )?"
            r"(?:(?P<which>this coming|this past|coming|past|this|last|next) )?weekend"
        ),
        _weekend,
    ),
    (
        re.compile(
            r"(?:(?:in|over|during|for|of) )?(?:the )?"
            r"(?:(?P<which>this past|past|this|last|next) )?"
            rf"(?P<season>{_choice(_SEASONS)})(?:(?: of)? (?P<year>\d{{4}}))?"
        ),
        _season,
    ),
    (re.compile(r"tonight|last night"), _night),
    (
        re.compile(
            r"(?P<now>now|just now|right now)"
            rf"|(?P<count>{_COUNT}) (?P<unit>{_CLOCK_UNIT})s? ago"
            rf"|in (?P<count2>{_COUNT}) (?P<unit2>{_CLOCK_UNIT})s?"
        ),
        _clock_relative,
    ),
)


# --- dateparser -------------------------------------------------------------------------------

_PERIODS: Final = {
    "day": TimePrecision.DAY,
    "week": TimePrecision.WEEK,
    "month": TimePrecision.MONTH,
    "quarter": TimePrecision.QUARTER,
    "year": TimePrecision.YEAR,
}
_SECONDS_WRITTEN: Final = re.compile(r"\d:\d{2}:\d{2}")
_MINUTES_WRITTEN: Final = re.compile(r"\d[:h]\d{2}")


def _read_with_dateparser(
    text: str, now: datetime, zone: ZoneInfo, *, english_only: bool = False
) -> ResolvedTime | None:
    """dateparser's point and period for ``text``, widened to the interval of that period
    in ``zone``; ``None`` when it reads no date (in English, with ``english_only``)."""
    # Imported here: dateparser and its language data take tens of milliseconds to load,
    # which only the first reading of a time should pay, not every start of the app.
    from dateparser.date import DateDataParser  # type: ignore[import-untyped]

    settings = {
        # The session's local wall time in whole minutes: the seconds of the moment a
        # message was sent are no part of what "5 minutes ago" names.
        "RELATIVE_BASE": now.replace(tzinfo=None, second=0, microsecond=0),
        # Read and return wall times of the speaker's zone; a time written with an offset
        # or a zone ("3pm CET") is converted into it.
        "TIMEZONE": zone.key,
        "RETURN_AS_TIMEZONE_AWARE": False,
        "RETURN_TIME_AS_PERIOD": True,
    }
    try:
        # English first, as most text is: finding a text's language costs dateparser ten
        # times the reading; only text English reads no date in goes through that.
        data = DateDataParser(languages=["en"], settings=settings).get_date_data(text)
        if data.date_obj is None and not english_only:
            data = DateDataParser(settings=settings).get_date_data(text)
    except Exception:
        # Odd text can fail deep inside the parser, and a zone newer than its database
        # fails there too: to the caller either is text that names no time.
        logger.debug("dateparser could not read a time expression", exc_info=True)
        return None
    point = data.date_obj
    if point is None:
        return None
    if data.period == "time":
        return clock_interval(point.replace(tzinfo=zone), _written_precision(text, point))
    if data.period == "part_of_day" and data.part_of_day is not None:
        return part_of_day_interval(point.date(), data.part_of_day.value, zone)
    precision = _PERIODS.get(data.period)
    return calendar_interval(point.date(), precision, zone) if precision else None


def _written_precision(text: str, point: datetime) -> TimePrecision:
    """A time of day is as precise as it was written: "3pm" an hour, "15:30" a minute."""
    if point.second or _SECONDS_WRITTEN.search(text):
        return TimePrecision.SECOND
    if point.minute or _MINUTES_WRITTEN.search(text):
        return TimePrecision.MINUTE
    return TimePrecision.HOUR
