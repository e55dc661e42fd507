"""Validators of setting values: small factories that each say what a value must be.

A validator takes a value and returns None, or the ``Problem`` with it: the check id, what
the value must be, and how the value is shown. ``checks.py`` puts one on every key of
``COGITATOR_MEMORY`` and turns problems into system check errors.
"""

from __future__ import annotations

import difflib
import math
import zoneinfo
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.utils.module_loading import import_string

__all__ = [
    "Problem",
    "Validator",
    "boolean",
    "http_url",
    "name_or_path",
    "non_empty_text",
    "one_of",
    "positive_number",
    "text",
    "time_zone_name",
    "unit_interval",
    "whole_number",
    "wrong_type",
]


@dataclass(frozen=True)
class Problem:
    """What is wrong with one value: the check id, what the value must be, and how the value
    is shown (its type's name for a wrong type, so a secret of the wrong type is not printed)."""

    id: str
    must_be: str
    shown: str
    hint: str | None = None


Validator = Callable[[Any], Problem | None]


def wrong_type(value: Any, expected: str, *, optional: bool) -> Problem:
    must_be = f"None or {expected}" if optional else expected
    return Problem("cogitator_memory.E002", must_be, type(value).__name__)


def _is_number(value: Any) -> bool:
    # bool is an int subclass, but True is never a timeout or a page size.
    return isinstance(value, int | float) and not isinstance(value, bool)


def text(*, optional: bool = False) -> Validator:
    """Any str (None too, when optional)."""

    def validate(value: Any) -> Problem | None:
        if value is None and optional:
            return None
        return None if isinstance(value, str) else wrong_type(value, "a str", optional=optional)

    return validate


def whole_number(minimum: int, maximum: int | None = None, *, optional: bool = False) -> Validator:
    """An int from ``minimum`` to ``maximum`` (None too, when optional)."""
    if maximum is not None:
        bounds = f"between {minimum} and {maximum}"
    else:
        bounds = "greater than 0" if minimum == 1 else f"{minimum} or more"

    def validate(value: Any) -> Problem | None:
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            return wrong_type(value, "an int", optional=optional)
        if value < minimum or (maximum is not None and value > maximum):
            return Problem("cogitator_memory.E004", bounds, repr(value))
        return None

    return validate


def positive_number() -> Validator:
    """An int or float greater than 0 and finite."""

    def validate(value: Any) -> Problem | None:
        if not _is_number(value):
            return wrong_type(value, "a number", optional=False)
        if not value > 0 or not math.isfinite(value):
            return Problem("cogitator_memory.E004", "greater than 0", repr(value))
        return None

    return validate


def boolean() -> Validator:
    """True or False."""

    def validate(value: Any) -> Problem | None:
        return None if isinstance(value, bool) else wrong_type(value, "a bool", optional=False)

    return validate


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises ValueError for a port that is no port)
    except ValueError:
        return False
    return (
        parts.scheme in {"http", "https"}
        and bool(parts.hostname)
        and not any(character.isspace() for character in value)
    )


def http_url(*, optional: bool = True) -> Validator:
    """An http or https URL with a host (None too, when optional)."""

    def validate(value: Any) -> Problem | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            return wrong_type(value, "a str", optional=optional)
        if not _is_http_url(value):
            return Problem(
                "cogitator_memory.E007",
                "None or an http(s) URL" if optional else "an http(s) URL",
                repr(value),
                hint="Write the whole URL with its scheme, e.g. 'http://localhost:11434'.",
            )
        return None

    return validate


def non_empty_text(*, optional: bool = True) -> Validator:
    """A non-empty str (None too, when optional): the name of something not listed here."""

    def validate(value: Any) -> Problem | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            return wrong_type(value, "a str", optional=optional)
        if not value.strip():
            must_be = "None or a non-empty str" if optional else "a non-empty str"
            return Problem("cogitator_memory.E006", must_be, repr(value))
        return None

    return validate


def name_or_path(names: Iterable[str], what: str, *, optional: bool) -> Validator:
    """One of ``names`` or the dotted path of something that imports (None too, when
    optional)."""

    def validate(value: Any) -> Problem | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            return wrong_type(value, "a str", optional=optional)
        known = sorted(names)
        if value in known:
            return None
        listed = ", ".join(known)
        must_be = f"{'None, ' if optional else ''}one of {listed} or a dotted path"
        if "." in value:
            try:
                import_string(value)
            except Exception as error:
                hint = f"Importing {value!r} failed: {type(error).__name__}: {error}"
                return Problem("cogitator_memory.E006", must_be, repr(value), hint=hint)
            return None
        close = difflib.get_close_matches(value, known, n=1)
        guess = f"Did you mean {close[0]!r}? " if close else ""
        hint = f"{guess}{what}: {listed}; or the dotted path of a class of your own."
        return Problem("cogitator_memory.E006", must_be, repr(value), hint=hint)

    return validate


def unit_interval() -> Validator:
    """A number from 0 to 1."""

    def validate(value: Any) -> Problem | None:
        if not _is_number(value):
            return wrong_type(value, "a number", optional=False)
        if not 0 <= value <= 1:
            return Problem("cogitator_memory.E004", "from 0 to 1", repr(value))
        return None

    return validate


def one_of(names: Iterable[str]) -> Validator:
    """One of ``names``."""
    known = list(names)

    def validate(value: Any) -> Problem | None:
        if not isinstance(value, str):
            return wrong_type(value, "a str", optional=False)
        if value not in known:
            listed = ", ".join(known)
            return Problem("cogitator_memory.E006", f"one of {listed}", repr(value))
        return None

    return validate


def time_zone_name() -> Validator:
    """An IANA time zone name, such as Europe/Lisbon."""

    def validate(value: Any) -> Problem | None:
        if not isinstance(value, str):
            return wrong_type(value, "a str", optional=False)
        if value == "localtime" or value not in zoneinfo.available_timezones():
            return Problem("cogitator_memory.E006", "an IANA time zone name", repr(value))
        return None

    return validate
