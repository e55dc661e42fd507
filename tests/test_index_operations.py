"""Indexes added to large tables: built concurrently on PostgreSQL, plainly elsewhere."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_entry_filter_indexes_are_built_without_blocking_writers(on_postgres: bool) -> None:
    # when
    out = StringIO()
    call_command("sqlmigrate", "cogitator_memory", "0011", stdout=out)
    # then
    statements = [line for line in out.getvalue().splitlines() if line.startswith("CREATE")]
    assert len(statements) == 3
    keyword = "CREATE INDEX CONCURRENTLY" if on_postgres else 'CREATE INDEX "'
    assert all(statement.startswith(keyword) for statement in statements)


def test_the_user_and_thread_lookup_indexes_are_built_without_blocking_writers(
    on_postgres: bool,
) -> None:
    # when
    out = StringIO()
    call_command(
        "sqlmigrate", "cogitator_memory", "0027_add_user_and_thread_lookup_indexes", stdout=out
    )
    # then each of the ten is built concurrently on PostgreSQL, and partial on both
    statements = [line for line in out.getvalue().splitlines() if line.startswith("CREATE")]
    assert len(statements) == 10
    keyword = "CREATE INDEX CONCURRENTLY" if on_postgres else 'CREATE INDEX "'
    assert all(statement.startswith(keyword) for statement in statements)
    assert all("IS NOT NULL" in statement for statement in statements)
