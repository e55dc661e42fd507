"""JSON values: what may be stored, and how stored JSON is filtered, the same on
PostgreSQL and SQLite.

What may be stored: PostgreSQL's jsonb and text refuse NUL characters and lone
surrogates, which SQLite stores and then fails to read back; NaN and infinities are not
JSON at all; very deep nesting exhausts Python's recursion. Checking input against these
rules first turns each of them into a clear error on both databases instead of a database
error (or a poisoned row).

Filtering: filters on JSON fields compare by type as well as value, so ``{"user": 1}``
matches neither ``"1"`` nor ``true``. The databases name JSON types differently
(``jsonb_typeof`` says ``number`` and ``boolean``; SQLite's ``json_type`` says
``integer``, ``real``, ``true``, ``false``), so ``JsonTypeOf`` maps both onto: string,
number, true, false, null, object, array (SQL NULL when the key is absent). A filter
holds at most ``MAX_FILTER_KEYS`` keys: each key is two conditions, and SQLite refuses
expressions nested past 1,000 levels.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from django.db import NotSupportedError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import CharField, F, Func, JSONField, Q, QuerySet, Value
from django.db.models.fields.json import KeyTransform
from django.db.models.sql.compiler import SQLCompiler

from cogitator_memory.exceptions import InvalidInput

MAX_DEPTH = 64
MAX_FILTER_KEYS = 32


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None."""
    if "\x00" in text:
        return "Texts cannot contain the NUL character."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Texts must be valid Unicode (no lone surrogates)."
    return None


def storable_text(value: object) -> bool:
    """Whether ``value`` is a text both databases can store and look up (an id a caller
    gives, say); lookups of anything else find nothing instead of failing."""
    return isinstance(value, str) and text_problem(value) is None


def json_problem(value: Any, *, depth: int = 0) -> str | None:
    """Why ``value`` cannot be stored as JSON, or None."""
    if depth > MAX_DEPTH:
        return f"JSON nested deeper than {MAX_DEPTH} levels."
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "Numbers must be finite (no NaN or infinity)."
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, list):
        for item in value:
            problem = json_problem(item, depth=depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return "Object keys must be texts."
            problem = text_problem(key) or json_problem(item, depth=depth + 1)
            if problem:
                return problem
        return None
    return f"{type(value).__name__} is not JSON data."


# --- filtering stored JSON ----------------------------------------------------------------

KEY_PATTERN = re.compile(r"^[A-Za-z0-9_:@-]{1,128}$")


def json_type_names(value: Any) -> list[str]:
    """The type name ``JsonTypeOf`` gives a value like ``value``."""
    if value is None:
        return ["null"]
    if value is True:
        return ["true"]
    if value is False:
        return ["false"]
    if isinstance(value, int | float):
        return ["number"]
    if isinstance(value, str):
        return ["string"]
    if isinstance(value, list):
        return ["array"]
    return ["object"]


class JsonTypeOf(Func):
    """The JSON type of ``field[key]``, as one of the names above."""

    output_field = CharField()

    def __init__(self, field: str, key: str, *, error_field: str = "metadata") -> None:
        if not KEY_PATTERN.fullmatch(key):
            raise InvalidInput(
                {error_field: f"Filter key {key!r}: use letters, digits and _ : @ - only."}
            )
        self.key = key
        super().__init__(F(field))

    def as_sql(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> tuple[str, tuple[Any, ...]]:
        raise NotSupportedError(
            f"Metadata filters support PostgreSQL and SQLite, not {connection.vendor}."
        )

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, tuple[Any, ...]]:
        column, params = compiler.compile(self.source_expressions[0])
        sql = (
            f"CASE jsonb_typeof({column} -> %s) WHEN 'boolean' THEN ({column} ->> %s)"
            f" ELSE jsonb_typeof({column} -> %s) END"
        )
        return sql, (*params, self.key, *params, self.key, *params, self.key)

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, tuple[Any, ...]]:
        column, params = compiler.compile(self.source_expressions[0])
        path = "$." + json.dumps(self.key)
        sql = (
            f"CASE json_type({column}, %s) WHEN 'integer' THEN 'number'"
            f" WHEN 'real' THEN 'number' WHEN 'text' THEN 'string'"
            f" ELSE json_type({column}, %s) END"
        )
        return sql, (*params, path, *params, path)


_Q = TypeVar("_Q", bound=QuerySet[Any])


def filter_json_values(
    queryset: _Q, field: str, values: Mapping[str, Any], *, error_field: str
) -> _Q:
    """Rows whose JSON ``field`` holds each key with an equal value of the same JSON type
    (1 matches neither "1" nor true). Values are texts, numbers, booleans or None; raises
    ``InvalidInput`` (on ``error_field``) for others, for keys outside [A-Za-z0-9_:@-] and
    for more than ``MAX_FILTER_KEYS`` keys."""
    if len(values) > MAX_FILTER_KEYS:
        raise InvalidInput(
            {error_field: f"A filter holds at most {MAX_FILTER_KEYS} keys, not {len(values)}."}
        )
    aliases: dict[str, Any] = {}
    condition = Q()
    for index, (key, value) in enumerate(values.items()):
        if isinstance(value, dict | list):
            raise InvalidInput(
                {error_field: f"Filter value of {key!r} must be a text, number, boolean or null."}
            )
        problem = json_problem(value)
        if problem:
            raise InvalidInput({error_field: f"Filter value of {key!r}: {problem}"})
        type_alias = f"{field}_type_{index}"
        aliases[type_alias] = JsonTypeOf(field, str(key), error_field=error_field)
        condition &= Q(**{f"{type_alias}__in": json_type_names(value)})
        # For true, false and null the type name is the whole comparison.
        if value is not None and not isinstance(value, bool):
            value_alias = f"{field}_value_{index}"
            aliases[value_alias] = KeyTransform(str(key), field)
            condition &= Q(**{value_alias: Value(value, output_field=JSONField())})
    return queryset.alias(**aliases).filter(condition)
