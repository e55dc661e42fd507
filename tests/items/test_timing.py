"""resolve_time: time words read into intervals of the speaker's calendar.

The table gives the exact interval (UTC, end excluded) and precision of each expression in
zones on both sides of UTC, across DST changes, midnights, year ends and leap days. The
properties check what must hold for any session: start before end, the interval holding the
point dateparser reads for an absolute date, adjacent units meeting, and no dependence on
the process's own time zone. pytest-socket keeps every test off the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import dateparser
import pytest
import tzlocal
from django.conf import settings
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.items.intervals import ResolvedTime, TimePrecision
from cogitator_memory.items.timing import MAX_EXPRESSION_LENGTH, resolve_time

LISBON = "Europe/Lisbon"
NEW_YORK = "America/New_York"
SYDNEY = "Australia/Sydney"
AUCKLAND = "Pacific/Auckland"
KOLKATA = "Asia/Kolkata"
ZONES = [LISBON, NEW_YORK, SYDNEY, AUCKLAND, KOLKATA, "UTC"]

# A Wednesday: 15:20 in Lisbon and UTC, 10:20 in New York, 20:50 in Kolkata, and already
# Thursday 5 March in Sydney (02:20) and Auckland (04:20).
WEDNESDAY = "2026-03-04T15:20Z"

SECOND = TimePrecision.SECOND
MINUTE = TimePrecision.MINUTE
HOUR = TimePrecision.HOUR
PART = TimePrecision.PART_OF_DAY
DAY = TimePrecision.DAY
WEEKEND = TimePrecision.WEEKEND
WEEK = TimePrecision.WEEK
MONTH = TimePrecision.MONTH
SEASON = TimePrecision.SEASON
QUARTER = TimePrecision.QUARTER
YEAR = TimePrecision.YEAR

# expression, session_at, zone, start, end, precision
RESOLVED = [
    # ISO 8601
    ("2026-03-04", WEDNESDAY, LISBON, "2026-03-04T00:00Z", "2026-03-05T00:00Z", DAY),
    ("2026-03-04", WEDNESDAY, KOLKATA, "2026-03-03T18:30Z", "2026-03-04T18:30Z", DAY),
    ("2026-03-04T15:00", WEDNESDAY, LISBON, "2026-03-04T15:00Z", "2026-03-04T15:01Z", MINUTE),
    ("2026-03-04T15:00", WEDNESDAY, NEW_YORK, "2026-03-04T20:00Z", "2026-03-04T20:01Z", MINUTE),
    ("2026-03-04T15", WEDNESDAY, KOLKATA, "2026-03-04T09:30Z", "2026-03-04T10:30Z", HOUR),
    (
        "2026-03-04T15:00:30Z",
        WEDNESDAY,
        NEW_YORK,
        "2026-03-04T15:00:30Z",
        "2026-03-04T15:00:31Z",
        SECOND,
    ),
    (
        "2026-03-04T15:00+05:30",
        WEDNESDAY,
        LISBON,
        "2026-03-04T09:30Z",
        "2026-03-04T09:31Z",
        MINUTE,
    ),
    ("2026-03", WEDNESDAY, SYDNEY, "2026-02-28T13:00Z", "2026-03-31T13:00Z", MONTH),
    ("2026-W10", WEDNESDAY, "UTC", "2026-03-02T00:00Z", "2026-03-09T00:00Z", WEEK),
    ("2026-W01", WEDNESDAY, "UTC", "2025-12-29T00:00Z", "2026-01-05T00:00Z", WEEK),
    ("2026-W10-3", WEDNESDAY, "UTC", "2026-03-04T00:00Z", "2026-03-05T00:00Z", DAY),
    ("20260304", WEDNESDAY, "UTC", "2026-03-04T00:00Z", "2026-03-05T00:00Z", DAY),
    # natural dates
    ("4 March 2026", WEDNESDAY, KOLKATA, "2026-03-03T18:30Z", "2026-03-04T18:30Z", DAY),
    ("March 4th, 2026", WEDNESDAY, SYDNEY, "2026-03-03T13:00Z", "2026-03-04T13:00Z", DAY),
    ("on the 1st of April", WEDNESDAY, LISBON, "2026-03-31T23:00Z", "2026-04-01T23:00Z", DAY),
    ("the 4th", WEDNESDAY, "UTC", "2026-03-04T00:00Z", "2026-03-05T00:00Z", DAY),
    ("March 2026", WEDNESDAY, LISBON, "2026-03-01T00:00Z", "2026-03-31T23:00Z", MONTH),
    ("March 2026", WEDNESDAY, NEW_YORK, "2026-03-01T05:00Z", "2026-04-01T04:00Z", MONTH),
    ("2026", WEDNESDAY, AUCKLAND, "2025-12-31T11:00Z", "2026-12-31T11:00Z", YEAR),
    ("Q1 2026", WEDNESDAY, "UTC", "2026-01-01T00:00Z", "2026-04-01T00:00Z", QUARTER),
    ("25/03/2026", WEDNESDAY, LISBON, "2026-03-25T00:00Z", "2026-03-26T00:00Z", DAY),
    ("03/25/2026", WEDNESDAY, NEW_YORK, "2026-03-25T04:00Z", "2026-03-26T04:00Z", DAY),
    ("3pm CET", WEDNESDAY, LISBON, "2026-03-04T14:00Z", "2026-03-04T15:00Z", HOUR),
    # relative words
    ("yesterday", WEDNESDAY, LISBON, "2026-03-03T00:00Z", "2026-03-04T00:00Z", DAY),
    ("today", WEDNESDAY, NEW_YORK, "2026-03-04T05:00Z", "2026-03-05T05:00Z", DAY),
    ("today", WEDNESDAY, SYDNEY, "2026-03-04T13:00Z", "2026-03-05T13:00Z", DAY),
    ("tomorrow", WEDNESDAY, KOLKATA, "2026-03-04T18:30Z", "2026-03-05T18:30Z", DAY),
    ("the day before yesterday", WEDNESDAY, "UTC", "2026-03-02T00:00Z", "2026-03-03T00:00Z", DAY),
    ("last week", WEDNESDAY, LISBON, "2026-02-23T00:00Z", "2026-03-02T00:00Z", WEEK),
    ("next month", WEDNESDAY, LISBON, "2026-03-31T23:00Z", "2026-04-30T23:00Z", MONTH),
    ("two days ago", WEDNESDAY, LISBON, "2026-03-02T00:00Z", "2026-03-03T00:00Z", DAY),
    ("in 3 weeks", WEDNESDAY, LISBON, "2026-03-23T00:00Z", "2026-03-29T23:00Z", WEEK),
    ("in a fortnight", WEDNESDAY, "UTC", "2026-03-16T00:00Z", "2026-03-23T00:00Z", WEEK),
    ("last year", WEDNESDAY, LISBON, "2025-01-01T00:00Z", "2026-01-01T00:00Z", YEAR),
    ("2 hours ago", WEDNESDAY, KOLKATA, "2026-03-04T12:30Z", "2026-03-04T13:30Z", HOUR),
    ("5 minutes ago", WEDNESDAY, "UTC", "2026-03-04T15:15Z", "2026-03-04T15:16Z", MINUTE),
    ("in an hour", WEDNESDAY, NEW_YORK, "2026-03-04T16:00Z", "2026-03-04T17:00Z", HOUR),
    ("now", WEDNESDAY, AUCKLAND, "2026-03-04T15:20Z", "2026-03-04T15:21Z", MINUTE),
    ("yesterday at 3pm", WEDNESDAY, LISBON, "2026-03-03T15:00Z", "2026-03-03T16:00Z", HOUR),
    ("at 3:30pm", WEDNESDAY, KOLKATA, "2026-03-04T10:00Z", "2026-03-04T10:01Z", MINUTE),
    # weekdays, from Wednesday 4 March (Thursday 5 March in Sydney)
    ("on Monday", WEDNESDAY, LISBON, "2026-03-02T00:00Z", "2026-03-03T00:00Z", DAY),
    ("Friday", WEDNESDAY, LISBON, "2026-03-06T00:00Z", "2026-03-07T00:00Z", DAY),
    ("Wednesday", WEDNESDAY, LISBON, "2026-03-04T00:00Z", "2026-03-05T00:00Z", DAY),
    ("last Friday", WEDNESDAY, LISBON, "2026-02-27T00:00Z", "2026-02-28T00:00Z", DAY),
    ("last Wednesday", WEDNESDAY, LISBON, "2026-02-25T00:00Z", "2026-02-26T00:00Z", DAY),
    ("next Tuesday", WEDNESDAY, LISBON, "2026-03-10T00:00Z", "2026-03-11T00:00Z", DAY),
    ("next Wednesday", WEDNESDAY, LISBON, "2026-03-11T00:00Z", "2026-03-12T00:00Z", DAY),
    ("this Monday", WEDNESDAY, LISBON, "2026-03-09T00:00Z", "2026-03-10T00:00Z", DAY),
    ("on Monday", "2026-03-08T12:00Z", LISBON, "2026-03-09T00:00Z", "2026-03-10T00:00Z", DAY),
    ("Friday", WEDNESDAY, NEW_YORK, "2026-03-06T05:00Z", "2026-03-07T05:00Z", DAY),
    ("Friday", WEDNESDAY, SYDNEY, "2026-03-05T13:00Z", "2026-03-06T13:00Z", DAY),
    ("Mon at 3pm", WEDNESDAY, NEW_YORK, "2026-03-02T20:00Z", "2026-03-02T21:00Z", HOUR),
    ("last Friday night", WEDNESDAY, LISBON, "2026-02-27T18:00Z", "2026-02-28T06:00Z", PART),
    # weekends: Saturday and Sunday, of the session's week unless said otherwise
    ("last weekend", WEDNESDAY, LISBON, "2026-02-28T00:00Z", "2026-03-02T00:00Z", WEEKEND),
    ("this weekend", WEDNESDAY, LISBON, "2026-03-07T00:00Z", "2026-03-09T00:00Z", WEEKEND),
    ("the coming weekend", WEDNESDAY, LISBON, "2026-03-07T00:00Z", "2026-03-09T00:00Z", WEEKEND),
    ("next weekend", WEDNESDAY, NEW_YORK, "2026-03-14T04:00Z", "2026-03-16T04:00Z", WEEKEND),
    ("over the weekend", WEDNESDAY, LISBON, "2026-02-28T00:00Z", "2026-03-02T00:00Z", WEEKEND),
    ("the weekend", "2026-03-06T12:00Z", LISBON, "2026-03-07T00:00Z", "2026-03-09T00:00Z", WEEKEND),
    (
        "this weekend",
        "2026-03-08T12:00Z",
        LISBON,
        "2026-03-07T00:00Z",
        "2026-03-09T00:00Z",
        WEEKEND,
    ),
    (
        "last weekend",
        "2026-03-08T12:00Z",
        LISBON,
        "2026-02-28T00:00Z",
        "2026-03-02T00:00Z",
        WEEKEND,
    ),
    (
        "this weekend",
        "2026-03-26T12:00Z",
        LISBON,
        "2026-03-28T00:00Z",
        "2026-03-29T23:00Z",
        WEEKEND,
    ),
    ("weekend", WEDNESDAY, SYDNEY, "2026-03-06T13:00Z", "2026-03-08T13:00Z", WEEKEND),
    # seasons: meteorological, turned round south of the equator
    ("last summer", WEDNESDAY, LISBON, "2025-05-31T23:00Z", "2025-08-31T23:00Z", SEASON),
    ("summer", WEDNESDAY, "UTC", "2026-06-01T00:00Z", "2026-09-01T00:00Z", SEASON),
    ("next summer", WEDNESDAY, "UTC", "2027-06-01T00:00Z", "2027-09-01T00:00Z", SEASON),
    ("winter 2025", WEDNESDAY, "UTC", "2025-12-01T00:00Z", "2026-03-01T00:00Z", SEASON),
    ("this winter", "2026-01-15T12:00Z", "UTC", "2025-12-01T00:00Z", "2026-03-01T00:00Z", SEASON),
    ("last winter", WEDNESDAY, "UTC", "2025-12-01T00:00Z", "2026-03-01T00:00Z", SEASON),
    ("in the summer of 2022", WEDNESDAY, "UTC", "2022-06-01T00:00Z", "2022-09-01T00:00Z", SEASON),
    ("in the fall", WEDNESDAY, NEW_YORK, "2026-09-01T04:00Z", "2026-12-01T05:00Z", SEASON),
    ("summer", WEDNESDAY, SYDNEY, "2026-11-30T13:00Z", "2027-02-28T13:00Z", SEASON),
    ("last summer", WEDNESDAY, SYDNEY, "2025-11-30T13:00Z", "2026-02-28T13:00Z", SEASON),
    # parts of the day
    ("this morning", WEDNESDAY, LISBON, "2026-03-04T06:00Z", "2026-03-04T12:00Z", PART),
    ("yesterday evening", WEDNESDAY, KOLKATA, "2026-03-03T12:30Z", "2026-03-03T18:30Z", PART),
    ("tonight", WEDNESDAY, NEW_YORK, "2026-03-04T23:00Z", "2026-03-05T11:00Z", PART),
    ("last night", WEDNESDAY, NEW_YORK, "2026-03-03T23:00Z", "2026-03-04T11:00Z", PART),
    ("tonight", "2026-03-05T01:00Z", LISBON, "2026-03-04T18:00Z", "2026-03-05T06:00Z", PART),
    ("last night", "2026-03-05T01:00Z", LISBON, "2026-03-03T18:00Z", "2026-03-04T06:00Z", PART),
    # DST: local days of 23 and 25 hours, skipped and repeated local times
    ("today", "2026-03-29T12:00Z", LISBON, "2026-03-29T00:00Z", "2026-03-29T23:00Z", DAY),
    ("yesterday", "2026-03-30T09:00Z", LISBON, "2026-03-29T00:00Z", "2026-03-29T23:00Z", DAY),
    ("this week", "2026-03-29T12:00Z", LISBON, "2026-03-23T00:00Z", "2026-03-29T23:00Z", WEEK),
    ("today", "2026-10-25T12:00Z", LISBON, "2026-10-24T23:00Z", "2026-10-26T00:00Z", DAY),
    ("this morning", "2026-03-29T12:00Z", LISBON, "2026-03-29T05:00Z", "2026-03-29T11:00Z", PART),
    ("last night", "2026-03-29T12:00Z", LISBON, "2026-03-28T18:00Z", "2026-03-29T05:00Z", PART),
    ("2026-03-08", WEDNESDAY, NEW_YORK, "2026-03-08T05:00Z", "2026-03-09T04:00Z", DAY),
    ("2026-11-01", WEDNESDAY, NEW_YORK, "2026-11-01T04:00Z", "2026-11-02T05:00Z", DAY),
    ("2026-04-05", WEDNESDAY, SYDNEY, "2026-04-04T13:00Z", "2026-04-05T14:00Z", DAY),
    ("2026-10-04", WEDNESDAY, SYDNEY, "2026-10-03T14:00Z", "2026-10-04T13:00Z", DAY),
    ("2026-04-05", WEDNESDAY, AUCKLAND, "2026-04-04T11:00Z", "2026-04-05T12:00Z", DAY),
    ("2026-09-27", WEDNESDAY, AUCKLAND, "2026-09-26T12:00Z", "2026-09-27T11:00Z", DAY),
    ("2026-03-08T02:30", WEDNESDAY, NEW_YORK, "2026-03-08T07:30Z", "2026-03-08T07:31Z", MINUTE),
    ("2026-11-01T01:30", WEDNESDAY, NEW_YORK, "2026-11-01T05:30Z", "2026-11-01T05:31Z", MINUTE),
    ("an hour ago", "2026-03-08T07:30Z", NEW_YORK, "2026-03-08T06:00Z", "2026-03-08T07:00Z", HOUR),
    ("an hour ago", "2026-11-01T06:30Z", NEW_YORK, "2026-11-01T05:00Z", "2026-11-01T06:00Z", HOUR),
    # just before and just after local midnight
    ("today", "2026-03-04T23:50Z", LISBON, "2026-03-04T00:00Z", "2026-03-05T00:00Z", DAY),
    ("today", "2026-03-05T00:10Z", LISBON, "2026-03-05T00:00Z", "2026-03-06T00:00Z", DAY),
    ("yesterday", "2026-03-05T00:10Z", LISBON, "2026-03-04T00:00Z", "2026-03-05T00:00Z", DAY),
    ("today", "2026-03-05T00:10Z", NEW_YORK, "2026-03-04T05:00Z", "2026-03-05T05:00Z", DAY),
    ("today", "2026-03-04T23:50Z", KOLKATA, "2026-03-04T18:30Z", "2026-03-05T18:30Z", DAY),
    ("tomorrow", "2026-03-04T23:50Z", "UTC", "2026-03-05T00:00Z", "2026-03-06T00:00Z", DAY),
    # year ends
    ("last year", "2025-12-31T11:30Z", AUCKLAND, "2024-12-31T11:00Z", "2025-12-31T11:00Z", YEAR),
    ("today", "2025-12-31T11:30Z", AUCKLAND, "2025-12-31T11:00Z", "2026-01-01T11:00Z", DAY),
    ("yesterday", "2025-12-31T11:30Z", AUCKLAND, "2025-12-30T11:00Z", "2025-12-31T11:00Z", DAY),
    ("this year", "2026-01-01T03:00Z", NEW_YORK, "2025-01-01T05:00Z", "2026-01-01T05:00Z", YEAR),
    ("next year", "2026-01-01T03:00Z", NEW_YORK, "2026-01-01T05:00Z", "2027-01-01T05:00Z", YEAR),
    ("last week", "2026-01-05T10:00Z", "UTC", "2025-12-29T00:00Z", "2026-01-05T00:00Z", WEEK),
    ("next month", "2026-12-15T12:00Z", "UTC", "2027-01-01T00:00Z", "2027-02-01T00:00Z", MONTH),
    ("last month", "2026-03-31T12:00Z", "UTC", "2026-02-01T00:00Z", "2026-03-01T00:00Z", MONTH),
    ("next month", "2026-01-31T12:00Z", "UTC", "2026-02-01T00:00Z", "2026-03-01T00:00Z", MONTH),
    # leap days
    ("2028-02-29", WEDNESDAY, "UTC", "2028-02-29T00:00Z", "2028-03-01T00:00Z", DAY),
    ("29 February 2028", WEDNESDAY, LISBON, "2028-02-29T00:00Z", "2028-03-01T00:00Z", DAY),
    ("February 2028", WEDNESDAY, "UTC", "2028-02-01T00:00Z", "2028-03-01T00:00Z", MONTH),
    ("tomorrow", "2028-02-28T12:00Z", "UTC", "2028-02-29T00:00Z", "2028-03-01T00:00Z", DAY),
    ("yesterday", "2028-03-01T12:00Z", "UTC", "2028-02-29T00:00Z", "2028-03-01T00:00Z", DAY),
    ("last year", "2028-02-29T12:00Z", "UTC", "2027-01-01T00:00Z", "2028-01-01T00:00Z", YEAR),
    # other languages, through dateparser
    ("ontem", WEDNESDAY, LISBON, "2026-03-03T00:00Z", "2026-03-04T00:00Z", DAY),
    ("semana passada", WEDNESDAY, LISBON, "2026-02-23T00:00Z", "2026-03-02T00:00Z", WEEK),
    ("março de 2026", WEDNESDAY, LISBON, "2026-03-01T00:00Z", "2026-03-31T23:00Z", MONTH),
    ("letzte Woche", WEDNESDAY, "UTC", "2026-02-23T00:00Z", "2026-03-02T00:00Z", WEEK),
    # what a model leaves around the words
    ('"Yesterday."', WEDNESDAY, LISBON, "2026-03-03T00:00Z", "2026-03-04T00:00Z", DAY),
    ("  LAST   week ", WEDNESDAY, LISBON, "2026-02-23T00:00Z", "2026-03-02T00:00Z", WEEK),
]


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


@pytest.mark.parametrize(
    ("expression", "session_at", "zone", "start", "end", "precision"),
    [pytest.param(*row, id=f"{row[2]}:{row[0]}@{row[1]}") for row in RESOLVED],
)
def test_an_expression_resolves_to_the_interval_of_the_speakers_calendar(
    expression: str,
    session_at: str,
    zone: str,
    start: str,
    end: str,
    precision: TimePrecision,
) -> None:
    # when
    resolved = resolve_time(expression, moment(session_at), zone)

    # then
    assert resolved == ResolvedTime(moment(start), moment(end), precision)
    assert resolved.start.tzinfo is UTC
    assert resolved.end.tzinfo is UTC


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "   ",
        '""',
        "banana",
        "soon",
        "the other day",
        "4",
        "12",
        "-1",
        "31 April",
        "April 31, 2026",
        "2026-02-29",
        "29 February 2026",
        "2026-02-30",
        "2026-13",
        "2027-W53",
        "2026-03-04T24:00",
        "04/03/2026",
        "monday at 3",
        "9999",
        "yesterday\x00",
        "yesterday " + "x" * MAX_EXPRESSION_LENGTH,
    ],
)
def test_text_that_names_no_readable_time_resolves_to_none(expression: str) -> None:
    # when
    resolved = resolve_time(expression, moment(WEDNESDAY), LISBON)

    # then
    assert resolved is None


def test_a_naive_session_time_is_refused_by_name() -> None:
    # when
    with pytest.raises(InvalidInput) as raised:
        resolve_time("yesterday", datetime(2026, 3, 4, 15, 20), LISBON)

    # then
    assert raised.value.errors == {
        "session_at": ["Must be an aware datetime (one with its time zone)."]
    }
    assert str(raised.value) == "session_at: Must be an aware datetime (one with its time zone)."


@pytest.mark.parametrize("zone", ["Mars/Olympus", "localtime", "", "europe/lisbon", None])
def test_a_zone_that_is_not_an_iana_name_is_refused_by_name(zone: str) -> None:
    # when
    with pytest.raises(InvalidInput) as raised:
        resolve_time("yesterday", moment(WEDNESDAY), zone)

    # then
    assert raised.value.errors == {
        "time_zone": [f"Must be an IANA time zone name such as Europe/Lisbon, not {zone!r}."]
    }


def test_every_bad_argument_is_named_at_once() -> None:
    # when
    with pytest.raises(InvalidInput) as raised:
        resolve_time(None, date(2026, 3, 4), "Mars/Olympus")  # type: ignore[arg-type]

    # then
    assert raised.value.errors == {
        "expression": ["Must be a text."],
        "time_zone": ["Must be an IANA time zone name such as Europe/Lisbon, not 'Mars/Olympus'."],
        "session_at": ["Must be an aware datetime (one with its time zone)."],
    }


def test_a_session_time_no_local_date_can_hold_is_refused() -> None:
    # when
    with pytest.raises(InvalidInput) as raised:
        resolve_time("today", datetime.max.replace(tzinfo=UTC), AUCKLAND)

    # then
    assert raised.value.errors == {
        "session_at": ["Is too close to the first or last date a datetime holds."]
    }


def test_importing_the_module_does_not_load_dateparser() -> None:
    # given
    code = (
        "import sys, cogitator_memory.items.timing; "
        "print('dateparser' in sys.modules, 'tzlocal' in sys.modules)"
    )

    # when
    finished = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=settings.BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
    )

    # then
    assert finished.stdout.split() == ["False", "False"]


# --- properties -------------------------------------------------------------------------------

MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
WEEKDAY_NAMES = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

zones = st.sampled_from(ZONES)
# Far enough from years 1 and 9999 that every unit around a session stays in range.
session_times = st.datetimes(
    min_value=datetime(1902, 1, 1), max_value=datetime(2098, 12, 31), timezones=st.just(UTC)
)
days = st.dates(min_value=date(1902, 1, 1), max_value=date(2098, 12, 31))


@st.composite
def absolute_expressions(draw: st.DrawFn) -> str:
    """An absolute date or date-time, in a form read by a rule or by dateparser."""
    day = draw(days)
    month = MONTH_NAMES[day.month - 1]
    return draw(
        st.sampled_from(
            [
                day.isoformat(),
                f"{day.isoformat()}T{draw(st.integers(0, 23)):02}:{draw(st.integers(0, 59)):02}",
                f"{day.day} {month} {day.year}",
                f"{month} {day.day}, {day.year}",
                f"{month} {day.year}",
                f"{day.year}",
            ]
        )
    )


relative_expressions = st.one_of(
    st.sampled_from(
        [
            "yesterday",
            "today",
            "tomorrow",
            "now",
            "tonight",
            "last night",
            "this morning",
            "this afternoon",
            "this evening",
            "last week",
            "this week",
            "next week",
            "last month",
            "this month",
            "next month",
            "last year",
            "this year",
            "next year",
        ]
    ),
    st.builds(
        "{} {}s ago".format,
        st.integers(1, 30),
        st.sampled_from(["minute", "hour", "day", "week", "month", "year"]),
    ),
    st.builds(
        "in {} {}s".format,
        st.integers(1, 30),
        st.sampled_from(["minute", "hour", "day", "week", "month", "year"]),
    ),
    st.builds(
        "{}{}{}".format,
        st.sampled_from(["", "on ", "last ", "next ", "this "]),
        st.sampled_from(WEEKDAY_NAMES),
        st.sampled_from(["", " morning", " evening", " night"]),
    ),
)
expressions = st.one_of(absolute_expressions(), relative_expressions)


@hypothesis_settings(deadline=None)
@given(expression=expressions, session_at=session_times, zone=zones)
def test_every_readable_expression_resolves_to_a_nonempty_interval(
    expression: str, session_at: datetime, zone: str
) -> None:
    # when
    resolved = resolve_time(expression, session_at, zone)

    # then
    assert resolved is not None
    assert resolved.start < resolved.end
    assert resolved.start.utcoffset() == timedelta(0)
    assert resolved.precision in TimePrecision


@hypothesis_settings(deadline=None)
@given(expression=absolute_expressions(), session_at=session_times, zone=zones)
def test_an_absolute_date_holds_the_point_dateparser_reads(
    expression: str, session_at: datetime, zone: str
) -> None:
    # given
    local_session = session_at.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    point = dateparser.parse(
        expression,
        settings={
            "TIMEZONE": zone,
            "RETURN_AS_TIMEZONE_AWARE": False,
            "RELATIVE_BASE": local_session,
        },
    )
    assert point is not None

    # when
    resolved = resolve_time(expression, session_at, zone)

    # then
    assert resolved is not None
    assert resolved.start <= point.replace(tzinfo=ZoneInfo(zone)) < resolved.end


@hypothesis_settings(deadline=None)
@given(session_at=session_times, zone=zones)
def test_adjacent_units_meet_and_the_current_one_holds_the_session(
    session_at: datetime, zone: str
) -> None:
    for before, current, after in [
        ("yesterday", "today", "tomorrow"),
        ("last week", "this week", "next week"),
        ("last month", "this month", "next month"),
        ("last year", "this year", "next year"),
    ]:
        # when
        earlier, now, later = (
            resolve_time(words, session_at, zone) for words in (before, current, after)
        )

        # then
        assert earlier is not None and now is not None and later is not None
        assert earlier.end == now.start
        assert now.end == later.start
        assert now.start <= session_at < now.end


@hypothesis_settings(deadline=None)
@given(expression=expressions, session_at=session_times, zone=zones, offset=st.integers(-14, 14))
def test_the_result_does_not_depend_on_the_zone_session_at_is_given_in(
    expression: str, session_at: datetime, zone: str, offset: int
) -> None:
    # given
    elsewhere = session_at.astimezone(timezone(timedelta(hours=offset)))

    # when, then
    assert resolve_time(expression, elsewhere, zone) == resolve_time(expression, session_at, zone)


@contextmanager
def process_time_zone(name: str) -> Iterator[None]:
    """Run with ``TZ`` set to ``name``, as a server configured for that zone would."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    tzlocal.reload_localzone()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()
        tzlocal.reload_localzone()


@hypothesis_settings(deadline=None, max_examples=50)
@given(expression=expressions, session_at=session_times, zone=zones)
def test_the_result_does_not_depend_on_the_process_time_zone(
    expression: str, session_at: datetime, zone: str
) -> None:
    # given
    results = []

    # when
    for process_zone in ["UTC", "America/Los_Angeles", "Asia/Tokyo", "Pacific/Kiritimati"]:
        with process_time_zone(process_zone):
            results.append(resolve_time(expression, session_at, zone))

    # then
    assert results[0] is not None
    assert all(result == results[0] for result in results)


@hypothesis_settings(deadline=None, max_examples=50)
@given(expression=st.text(max_size=40), session_at=session_times, zone=zones)
def test_any_text_resolves_or_not_but_never_raises(
    expression: str, session_at: datetime, zone: str
) -> None:
    # when
    resolved = resolve_time(expression, session_at, zone)

    # then
    assert resolved is None or resolved.start < resolved.end


@pytest.mark.parametrize(
    ("expression", "start"),
    [
        ("last May", datetime(2025, 4, 30, 23, 0, tzinfo=UTC)),
        ("last March", datetime(2025, 3, 1, tzinfo=UTC)),
        ("this March", datetime(2026, 3, 1, tzinfo=UTC)),
        ("next March", datetime(2027, 3, 1, tzinfo=UTC)),
        ("next June", datetime(2026, 5, 31, 23, 0, tzinfo=UTC)),
        ("since May", datetime(2025, 4, 30, 23, 0, tzinfo=UTC)),
        ("since March", datetime(2026, 3, 1, tzinfo=UTC)),
        ("in 2019", datetime(2019, 1, 1, tzinfo=UTC)),
        ("from last week", datetime(2026, 2, 23, tzinfo=UTC)),
    ],
)
def test_named_months_and_leading_prepositions(expression: str, start: datetime) -> None:
    resolved = resolve_time(expression, datetime(2026, 3, 4, 15, 20, tzinfo=UTC), "Europe/Lisbon")
    assert resolved is not None and resolved.start == start


def test_english_only_reads_english_and_leaves_other_languages_unread() -> None:
    at = moment(WEDNESDAY)
    assert resolve_time("letzte Woche", at, "UTC", english_only=True) is None
    assert resolve_time("ontem", at, LISBON, english_only=True) is None
    english = resolve_time("last week", at, "UTC", english_only=True)
    assert english == resolve_time("last week", at, "UTC")
    assert english is not None and english.precision == WEEK
    # dateparser's English, not only the rules
    assert resolve_time("the 3rd of March 2026", at, "UTC", english_only=True) == resolve_time(
        "the 3rd of March 2026", at, "UTC"
    )
