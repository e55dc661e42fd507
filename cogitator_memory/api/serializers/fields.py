"""Fields that read JSON bodies and query parameters strictly, as the OpenAPI schema says.

DRF's own fields convert: a ``CharField`` takes ``0`` as ``"0"``, a ``BooleanField`` takes
``0``, ``"yes"`` and ``"on"``, a query parameter given empty (``?limit=``) counts as absent,
and a ``DateTimeField`` takes times without an offset. These fields take exactly what their
schema allows (``cogitator_memory.api.schema`` writes it), so a request the schema calls
valid is accepted and one it calls invalid is refused:

- texts are texts, untrimmed, and never hold NUL (their schema ``pattern`` says so); lone
  surrogates are refused as well, which no pattern can spell;
- booleans are ``true`` or ``false`` (in a query, those two words);
- integers are integers (in a query, digits);
- moments are RFC 3339 date-times; one outside the years 1 to 9999 once in UTC is clamped
  to the nearest moment that can be stored, rather than refused.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.utils import html

from cogitator_memory.conf import memory_settings

# A text the databases can store: no NUL. Python's ``\Z`` is the schema's ``$`` (``$``
# alone would let a trailing newline through).
TEXT_PATTERN = r"^[^\x00]*\Z"
# The same, and not only white space (the characters str.isspace() and str.strip() know,
# spelled out so that every regex engine reads them alike).
_SPACE = r"\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK_PATTERN = rf"^[^\x00]*[^\x00{_SPACE}][^\x00]*\Z"
# The same white space, for patterns of their own (inside a character class).
SPACE_CHARACTERS = _SPACE

_RFC3339 = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))\Z"
)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_FIRST_MOMENT = datetime.min.replace(tzinfo=UTC)
_LAST_MOMENT = datetime.max.replace(tzinfo=UTC)
# The Gregorian calendar repeats every 400 years; year 0 is read as year 400 less that.
_DAYS_IN_400_YEARS = 146097
_INTEGER = re.compile(r"^-?[0-9]+\Z")


def schema_pattern(pattern: str) -> str:
    """A Python pattern as the schema writes it (ECMA 262, as drf-spectacular does)."""
    return pattern.replace(r"\x", r"\u00").replace(r"\Z", "$").replace(r"\A", "^")


def parse_moment(text: str) -> datetime | None:
    """An RFC 3339 date-time as an aware datetime in UTC, or None when ``text`` is not one.

    A moment before 0001-01-01T00:00:00Z or after 9999-12-31T23:59:59.999999Z (a valid
    date-time whose offset carries it past the years a datetime holds) is clamped to that
    end; a leap second is the last microsecond of its minute.
    """
    found = _RFC3339.match(text)
    if found is None:
        return None
    year, month, day, hour, minute, second = (int(found[index]) for index in range(1, 7))
    if not (1 <= month <= 12 and hour <= 23 and minute <= 59 and second <= 60):
        return None
    if not 1 <= day <= calendar.monthrange(year or 400, month)[1]:
        return None
    offset = 0
    if found[8]:
        offset_hours, offset_minutes = int(found[9]), int(found[10])
        if offset_hours > 23 or offset_minutes > 59:
            return None
        offset = (offset_hours * 60 + offset_minutes) * (1 if found[8] == "+" else -1)
    if year:
        days = date(year, month, day).toordinal() - _EPOCH_DAY
    else:
        days = date(400, month, day).toordinal() - _DAYS_IN_400_YEARS - _EPOCH_DAY
    minutes = days * 1440 + hour * 60 + minute - offset
    fraction = int((found[7] or "0")[:6].ljust(6, "0"))
    if second == 60:
        # RFC 3339 allows a leap second only as the last second of a UTC day.
        if minutes % 1440 != 1439:
            return None
        second, fraction = 59, 999_999
    microseconds = (minutes * 60 + second) * 1_000_000 + fraction
    if microseconds < (_FIRST_MOMENT - _EPOCH) // _MICROSECOND:
        return _FIRST_MOMENT
    if microseconds > (_LAST_MOMENT - _EPOCH) // _MICROSECOND:
        return _LAST_MOMENT
    return _EPOCH + microseconds * _MICROSECOND


def parse_query_integer(text: str) -> int | None:
    """A query parameter's integer (digits, maybe a minus), or None when it is not one."""
    return int(text) if _INTEGER.match(text) else None


class PatternValidator(RegexValidator):
    """A text must match the pattern; a text with NUL (which no pattern here allows) is
    left to DRF's own check, so that it is reported once, in DRF's words."""

    def __call__(self, value: Any) -> None:
        if isinstance(value, str) and "\x00" in value:
            return
        super().__call__(value)


class ExactInputMixin(serializers.Field):
    """A query parameter given with an empty value keeps that value, so ``?limit=`` is
    checked (and refused) like any other value instead of counting as absent."""

    def get_value(self, dictionary: Any) -> Any:
        if html.is_html_input(dictionary):
            return dictionary.get(self.field_name, empty)
        return super().get_value(dictionary)


class StrictCharField(ExactInputMixin, serializers.CharField):
    """A text, taken as sent: not trimmed, never a number turned into a text.

    ``pattern`` (anchored with ``^`` and ``\\Z``) narrows it and is the schema's pattern;
    without one it is ``TEXT_PATTERN``.
    """

    def __init__(
        self, *, pattern: str | None = None, pattern_message: str | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)
        # drf-spectacular writes the first RegexValidator as the schema's pattern.
        pattern_validator = PatternValidator(
            pattern or TEXT_PATTERN, message=pattern_message or "Not a valid value."
        )
        self.validators = [pattern_validator, *self.validators]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class StrictChoiceField(ExactInputMixin, serializers.ChoiceField):
    """One of the choices, as a text (DRF's compares ``str(value)``, so ``1`` matches
    ``"1"``)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


class StrictBooleanField(ExactInputMixin, serializers.BooleanField):
    """``true`` or ``false`` in a JSON body; nothing else (no ``0``, ``"true"``, ``"on"``)."""

    def to_internal_value(self, data: Any) -> bool:
        if data is True or data is False:
            return data
        self.fail("invalid", input=data)
        raise AssertionError("unreachable")  # pragma: no cover


class QueryBooleanField(ExactInputMixin, serializers.BooleanField):
    """``true`` or ``false`` in a query, the words the schema's boolean is written as."""

    WORDS = {"true": True, "false": False}

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, str) and data in self.WORDS:
            return self.WORDS[data]
        self.fail("invalid", input=data)
        raise AssertionError("unreachable")  # pragma: no cover


class StrictIntegerField(ExactInputMixin, serializers.IntegerField):
    """An integer in a JSON body: a number without a fraction (``2.0`` is one, as JSON
    Schema counts it); never a text or a boolean."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, int) and not isinstance(data, bool):
            return super().to_internal_value(data)
        if isinstance(data, float) and data.is_integer():
            return super().to_internal_value(int(data))
        self.fail("invalid")
        raise AssertionError("unreachable")  # pragma: no cover


class QueryIntegerField(ExactInputMixin, serializers.IntegerField):
    """An integer in a query: digits, maybe after a minus (no spaces, ``+``, ``_`` or
    ``.0``)."""

    def to_internal_value(self, data: Any) -> int:
        value = parse_query_integer(data) if isinstance(data, str) else None
        if value is None:
            self.fail("invalid")
        return super().to_internal_value(value)


class PageLimitField(QueryIntegerField):
    """The size of one page of a list, from 1 to ``LIST_THREADS_MAX_LIMIT``.

    The maximum is read from the settings when a request is validated or the schema is
    made, never when the module is imported, so a project's setting (or a test's
    ``override_settings``) is the one that counts."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", "Page size.")
        super().__init__(min_value=1, **kwargs)

    @property
    def max_value(self) -> int:
        return int(memory_settings.LIST_THREADS_MAX_LIMIT)

    @max_value.setter
    def max_value(self, value: Any) -> None:
        """``IntegerField.__init__`` sets None; the bound is the setting's."""

    def to_internal_value(self, data: Any) -> int:
        value = super().to_internal_value(data)
        if value > self.max_value:
            self.fail("max_value", max_value=self.max_value)
        return value


class StrictDateTimeField(ExactInputMixin, serializers.DateTimeField):
    """An RFC 3339 date-time, read as ``parse_moment`` reads it (clamped, in UTC)."""

    def to_internal_value(self, value: Any) -> datetime:
        moment = parse_moment(value) if isinstance(value, str) else None
        if moment is None:
            self.fail("invalid", format="an RFC 3339 date-time, e.g. 2025-01-31T12:00:00Z")
        return moment


class JSONObjectField(serializers.DictField):
    """A JSON object of any values; the services refuse what cannot be stored (NUL,
    lone surrogates, deep nesting), and the schema says the same of every nested text."""


class ThreadMetadataField(JSONObjectField):
    """A thread's metadata: a JSON object whose ``userId``, if given, names the user the
    thread belongs to (a non-empty text, or null for none)."""


class EntryContentField(serializers.JSONField):
    """An entry's content: a text, or a list of content parts (JSON values)."""

    default_error_messages = {"invalid": "Content must be a text or a list of parts."}

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str | list):
            self.fail("invalid")
        return super().to_internal_value(data)  # type: ignore[arg-type]


class ToolCallsField(serializers.ListField):
    """Tool calls: objects, each with a non-empty text ``id`` and ``name``."""

    child = serializers.DictField()


class ToolResultsField(serializers.ListField):
    """Tool results: JSON objects."""

    child = serializers.DictField()


class StrictFloatField(ExactInputMixin, serializers.FloatField):
    """A number in a JSON body; never a text or a boolean."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, int | float) and not isinstance(data, bool):
            return float(super().to_internal_value(data))
        self.fail("invalid")
        raise AssertionError("unreachable")  # pragma: no cover
