"""Query filters of the API lists.

Each filter reads its parameter exactly as the schema describes it (the schema comes from
the ``extend_schema_field`` on each): a parameter given empty is refused, not ignored.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema_field

from cogitator_memory.api.serializers.fields import (
    TEXT_PATTERN,
    parse_moment,
    schema_pattern,
)
from cogitator_memory.jsondata import KEY_PATTERN, MAX_FILTER_KEYS, text_problem
from cogitator_memory.threads.models import Thread
from cogitator_memory.threads.querysets import ThreadQuerySet

EMPTY_MESSAGE = "Give a value, or leave the parameter out."
TEXT = {"pattern": schema_pattern(TEXT_PATTERN)}
# The metadata filter as the schema describes it: an object of at most MAX_FILTER_KEYS
# keys, each matching KEY_PATTERN, whose values are texts, numbers, booleans or null.
METADATA_FILTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "maxProperties": MAX_FILTER_KEYS,
    "propertyNames": {"pattern": KEY_PATTERN.pattern},
    "additionalProperties": {
        "type": ["string", "number", "boolean", "null"],
        **TEXT,
    },
}


class TextField(forms.CharField):
    """A text query parameter, untrimmed; given empty, refused."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("strip", False)
        super().__init__(**kwargs)

    def clean(self, value: Any) -> Any:
        if value == "":
            raise ValidationError(EMPTY_MESSAGE)
        if isinstance(value, str) and (problem := text_problem(value)):
            raise ValidationError(problem)
        return super().clean(value)


class JSONObjectField(TextField):
    """A query parameter holding a JSON object, e.g. ``{"userId": "ana"}``."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if not text:
            return None
        try:
            parsed = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"Not JSON: {exc.msg}.") from exc
        except (ValueError, RecursionError) as exc:
            raise ValidationError(f"Not JSON: {exc}.") from exc
        if not isinstance(parsed, dict):
            raise ValidationError("Must be a JSON object of key: value.")
        for key in parsed:
            # fullmatch: the pattern's "$" would also let a trailing newline through.
            if not KEY_PATTERN.fullmatch(key):
                raise ValidationError(f"Filter key {key!r}: use letters, digits and _ : @ - only.")
        return parsed


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class UTCDateTimeField(TextField):
    """An RFC 3339 date-time, in UTC, clamped to the years 1 to 9999 (``parse_moment``)."""

    def to_python(self, value: Any) -> datetime | None:  # type: ignore[override]
        text = super().to_python(value)
        if not text:
            return None
        moment = parse_moment(text)
        if moment is None:
            raise ValidationError("Enter an RFC 3339 date-time, e.g. 2025-01-31T12:00:00Z.")
        return moment


@extend_schema_field({"type": "string", "minLength": 1, "maxLength": 255, **TEXT})
class TextFilter(django_filters.CharFilter):
    field_class = TextField


@extend_schema_field({"type": "string", "format": "date-time"})
class UTCDateTimeFilter(django_filters.Filter):
    field_class = UTCDateTimeField


@extend_schema_field(METADATA_FILTER_SCHEMA)
class JSONObjectFilter(django_filters.Filter):
    field_class = JSONObjectField


class ThreadFilterSet(django_filters.FilterSet):
    agent_id = TextFilter(field_name="agent_id", max_length=255)
    metadata = JSONObjectFilter(
        method="filter_metadata",
        help_text="A JSON object; threads whose metadata holds each key with an equal value "
        'of the same JSON type, e.g. {"userId": "ana"}.',
    )
    updated_after = UTCDateTimeFilter(field_name="updated_at", lookup_expr="gt")
    updated_before = UTCDateTimeFilter(field_name="updated_at", lookup_expr="lt")

    class Meta:
        model = Thread
        fields = ["agent_id", "metadata", "updated_after", "updated_before"]

    def filter_metadata(
        self, queryset: ThreadQuerySet, name: str, value: dict[str, Any] | None
    ) -> ThreadQuerySet:
        # A bad key or value raises InvalidInput, which the API answers with a 400.
        return queryset.with_metadata(value) if value else queryset
