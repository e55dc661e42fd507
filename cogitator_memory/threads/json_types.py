"""The JSON type of a metadata value, named the same on PostgreSQL and SQLite.

Filters on metadata compare by type as well as value, so ``{"user": 1}`` matches neither
``"1"`` nor ``true``. The databases name JSON types differently (``jsonb_typeof`` says
``number`` and ``boolean``; SQLite's ``json_type`` says ``integer``, ``real``, ``true``,
``false``), so ``JsonTypeOf`` maps both onto: string, number, true, false, null, object,
array (SQL NULL when the key is absent).
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import NotSupportedError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import CharField, F, Func
from django.db.models.sql.compiler import SQLCompiler

from cogitator_memory.exceptions import InvalidInput

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

    def __init__(self, field: str, key: str) -> None:
        if not KEY_PATTERN.match(key):
            raise InvalidInput(
                {"metadata": f"Filter key {key!r}: use letters, digits and _ : @ - only."}
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
