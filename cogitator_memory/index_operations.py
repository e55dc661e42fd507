"""Migration operations that add indexes to tables that may already be large.

``CREATE INDEX`` blocks writes to its table until the index is built: minutes on a table
of millions of entries. On PostgreSQL ``AddIndexWithoutBlocking`` builds with ``CREATE
INDEX CONCURRENTLY`` when its migration runs outside a transaction (``atomic = False``),
so writers go on meanwhile; elsewhere, and inside a transaction, it is Django's
``AddIndex``. A concurrent build that fails leaves an invalid index behind: drop it
before migrating again.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

__all__ = ["AddIndexWithoutBlocking"]


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
