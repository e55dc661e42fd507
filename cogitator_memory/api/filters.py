"""Query filters of the API lists."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django_filters.fields import IsoDateTimeField

from cogitator_memory.threads.models import Thread
from cogitator_memory.threads.querysets import ThreadQuerySet


class JSONObjectField(forms.CharField):
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
        return parsed


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class UTCDateTimeField(forms.DateTimeField):
    """An ISO 8601 moment that must exist in UTC (years 1 to 9999)."""

    def to_python(self, value: Any) -> datetime | None:
        moment = IsoDateTimeField().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except OverflowError as exc:
            raise ValidationError("This moment is out of range once converted to UTC.") from exc


class UTCDateTimeFilter(django_filters.Filter):
    field_class = UTCDateTimeField


class JSONObjectFilter(django_filters.Filter):
    field_class = JSONObjectField


class ThreadFilterSet(django_filters.FilterSet):
    agent_id = django_filters.CharFilter(field_name="agent_id", max_length=255)
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
