"""The time a memory item names: time words read into an interval of the speaker's calendar.

A model that extracts memory items marks up the time words it found ("yesterday",
"4 March 2026", "last Friday"). ``resolve_time`` reads one such expression, said at
``session_at`` by someone in the IANA zone ``time_zone``, as the interval ``[start, end)``
it names, with its precision. The rules (the README's "Resolving time" says the same):

- Intervals are whole units of the speaker's calendar: a day runs from local midnight to
  local midnight (23 or 25 hours across a DST change), a week from Monday to Monday
  (ISO 8601), a month, quarter or year from its first day. ``start`` and ``end`` are aware
  datetimes in UTC.
- An hour, minute or second lasts exactly that long: the one of the local clock that holds
  the moment named. A local time a DST change skips or repeats is read with the offset in
  force before the change. A written offset or zone ("15:00Z", "3pm CET") wins over the
  speaker's zone. A time is as precise as written: "3pm" an hour, "15:30" a minute.
- A relative expression counts whole units from the session and names the whole unit it
  lands in ("last week" is the week before the session's week, "in 3 weeks" the week
  holding the day 21 days on): the calendar's days for days and longer, elapsed time for
  hours and shorter.
- Weekdays: a bare one ("Monday", "on Monday") is the nearest day of that name, at most
  three days before or after the session's day, that day itself included; "last" is the
  latest one before the session's day, "next" and "coming" the first one after it, "this"
  the first one from the session's day on.
- Parts of the day: early morning 00-06, morning 06-12, afternoon 12-18, evening 18-24,
  night 18-06 of the next day. Before 06:00 "tonight" is the night under way, and "last
  night" the one before it.
- A date without a year is in the session's year. A numeric date whose day and month could
  be swapped (04/03/2026) is ambiguous and unresolved.

ISO 8601 and English forms are read by the rules of ``items/time_words.py``; other words, in
any language dateparser knows ("ontem", "letzte Woche"), by dateparser, which never uses the
network and is loaded on first use.
"""

from __future__ import annotations

import unicodedata
import zoneinfo
from datetime import datetime
from functools import lru_cache
from typing import Final

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.items.intervals import ResolvedTime, TimePrecision
from cogitator_memory.items.time_words import read_time_words

# ResolvedTime and TimePrecision are defined in items/intervals.py; they are named here too
# because every caller of resolve_time needs them.
__all__ = ["MAX_EXPRESSION_LENGTH", "ResolvedTime", "TimePrecision", "resolve_time"]

# Marked-up time words are a few words long; longer text is not one expression, and the
# parser's time grows with its length.
MAX_EXPRESSION_LENGTH: Final = 200

# Quotes, brackets and sentence punctuation a model may leave around the words it marked.
_EDGE_PUNCTUATION: Final = " .,;!?\"'()[]{}\u00ab\u00bb\u2018\u2019\u201c\u201d"


def resolve_time(
    expression: str, session_at: datetime, time_zone: str, *, english_only: bool = False
) -> ResolvedTime | None:
    """Read the time words ``expression``, said at ``session_at`` by someone in the IANA zone
    ``time_zone``, as the interval they name (the rules: this module's docstring).
    ``english_only`` reads English words only (text known to be English, read faster).

    Returns a ``ResolvedTime`` (start included and end excluded, in UTC, with the precision),
    or ``None`` for text that names no time this can read: unknown words, an ambiguous
    numeric date, a day the calendar lacks (30 February), a year past 9999, text longer than
    ``MAX_EXPRESSION_LENGTH``. Text never raises.

    Raises ``InvalidInput`` naming each bad argument: ``expression`` not a text,
    ``session_at`` not an aware datetime, ``time_zone`` not an IANA zone name.
    """
    zone, now = _check_arguments(expression, session_at, time_zone)
    text = _normalize(expression)
    if text.startswith("since ") and text.removeprefix("since ") in _MONTHS:
        # "since May" looks back: the latest May at or before the session's month.
        name = text.removeprefix("since ")
        text = f"this {name}" if _MONTHS.index(name) + 1 <= now.month else f"last {name}"
    text = _named_month(_without_preposition(text), now)
    if not text:
        return None
    try:
        return read_time_words(text, now, zone, english_only=english_only)
    except (OverflowError, ValueError):
        # A day the calendar lacks, or an interval past the years datetime holds.
        return None


# Words that lead time words without changing the time they name ("since May" starts in
# May). The model is asked for the time words as written, so they come; "in" and "on" are
# left to the rules, where "in 3 weeks" counts forward.
_PREPOSITIONS: Final = ("since", "from", "during", "around", "about")
_MONTHS: Final = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip


def _without_preposition(text: str) -> str:
    first, _, rest = text.partition(" ")
    return rest if first in _PREPOSITIONS and rest else text


def _named_month(text: str, now: datetime) -> str:
    """ "last May", "next June", "this March": the month of that name before, after or in
    the session's year, written with its year."""
    which, _, name = text.partition(" ")
    if which not in ("last", "next", "this", "coming") or name not in _MONTHS:
        return text
    month = _MONTHS.index(name) + 1
    year = now.year
    if which == "last" and month >= now.month:
        year -= 1
    elif which in ("next", "coming") and month <= now.month:
        year += 1
    return f"{name} {year}"


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    # "localtime" is the host's own zone under another name, not a zone of the IANA database.
    return frozenset(zoneinfo.available_timezones() - {"localtime"})


def _check_arguments(
    expression: object, session_at: object, time_zone: object
) -> tuple[zoneinfo.ZoneInfo, datetime]:
    errors: dict[str, str] = {}
    if not isinstance(expression, str):
        errors["expression"] = "Must be a text."
    zone = now = None
    if isinstance(time_zone, str) and time_zone in _zone_names():
        zone = zoneinfo.ZoneInfo(time_zone)
    else:
        errors["time_zone"] = (
            f"Must be an IANA time zone name such as Europe/Lisbon, not {time_zone!r}."
        )
    if not isinstance(session_at, datetime) or session_at.utcoffset() is None:
        errors["session_at"] = "Must be an aware datetime (one with its time zone)."
    elif zone is not None:
        try:
            now = session_at.astimezone(zone)
        except OverflowError:
            errors["session_at"] = "Is too close to the first or last date a datetime holds."
    if errors or zone is None or now is None:
        raise InvalidInput(errors)
    return zone, now


def _normalize(expression: str) -> str:
    """Lower case, single spaces, no punctuation around; empty for text to leave unread."""
    text = unicodedata.normalize("NFKC", expression)
    if len(text) > MAX_EXPRESSION_LENGTH:
        return ""
    if any(unicodedata.category(char) == "Cc" and not char.isspace() for char in text):
        return ""
    return " ".join(text.split()).strip(_EDGE_PUNCTUATION).lower()
