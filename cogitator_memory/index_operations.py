"""Migration operations that add indexes to tables that may already be large.

``CREATE INDEX`` blocks writes to its table until the index is built: minutes on a table
of millions of entries. On PostgreSQL ``AddIndexWithoutBlocking`` builds with ``CREATE
INDEX CONCURRENTLY`` when its migration runs outside a transaction (``atomic = False``),
so writers go on meanwhile; elsewhere, and inside a transaction, it is Django's
``AddIndex``. A concurrent build that fails leaves an invalid index behind: drop it
before migrating again.

``CoveringIndex`` keeps columns in an index (``INCLUDE``) on the databases that support
covering indexes (PostgreSQL), for index-only scans, and is a plain index elsewhere.
Django's own ``include=`` does the same, but makes every ``check`` and ``migrate`` on
SQLite warn that the columns are ignored (models.W040).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import migrations, models

__all__ = ["AddIndexWithoutBlocking", "CoveringIndex"]


class CoveringIndex(models.Index):
    """An index whose ``covering`` fields are kept in it where the database supports
    covering indexes, and left out elsewhere."""

    def __init__(self, *args: Any, covering: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.covering = tuple(covering)

    def deconstruct(self) -> Any:
        path, args, kwargs = super().deconstruct()
        if self.covering:
            kwargs["covering"] = self.covering
        return path, args, kwargs

    def create_sql(self, model: Any, schema_editor: Any, using: str = "", **kwargs: Any) -> Any:
        if self.covering and schema_editor.connection.features.supports_covering_indexes:
            _, args, options = super().deconstruct()
            covered = models.Index(*args, **options, include=self.covering)
            return covered.create_sql(model, schema_editor, using=using, **kwargs)
        return super().create_sql(model, schema_editor, using=using, **kwargs)


class AddIndexWithoutBlocking(migrations.AddIndex):
    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if not _concurrently(schema_editor):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.add_index(model, self.index, concurrently=True)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if not _concurrently(schema_editor):
            super().database_backwards(app_label, schema_editor, from_state, to_state)
            return
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.remove_index(model, self.index, concurrently=True)


def _concurrently(schema_editor: Any) -> bool:
    connection = schema_editor.connection
    return bool(connection.vendor == "postgresql" and not connection.in_atomic_block)
