"""Indexes added to large tables: built concurrently on PostgreSQL, plainly elsewhere."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core import checks
from django.core.management import call_command
from django.db import connection

from cogitator_memory.index_operations import CoveringIndex
from cogitator_memory.keywords.models import KeywordPosting

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


def test_the_checks_of_the_database_name_no_index_it_cannot_build() -> None:
    # when: the checks migrate runs, against the suite's database
    messages = checks.run_checks(databases=["default"])
    # then: no index with columns SQLite would ignore (models.W040)
    assert [message.id for message in messages if message.id == "models.W040"] == []


def test_the_keyword_term_index_keeps_the_document_id_where_the_database_can(
    on_postgres: bool,
) -> None:
    # given
    index = next(i for i in KeywordPosting._meta.indexes if i.name == "cm_kwposting_term")
    editor = connection.SchemaEditorClass(connection, collect_sql=True)
    # when: as a migration would build it, and as the database holds it
    built = str(index.create_sql(KeywordPosting, editor))
    with connection.cursor() as cursor:
        held = [
            str(index["columns"])
            for name, index in connection.introspection.get_constraints(
                cursor, KeywordPosting._meta.db_table
            ).items()
            if name == "cm_kwposting_term"
        ]
    # then: covering on PostgreSQL (index-only scans of candidates), plain on SQLite
    assert isinstance(index, CoveringIndex) and not index.include
    assert ('INCLUDE ("document_id")' in built) is on_postgres
    key = ["corpus_id", "term", "count", "length", "id"]
    assert held == [str([*key, "document_id"] if on_postgres else key)]
    if on_postgres:
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'cm_kwposting_term'")
            [(definition,)] = cursor.fetchall()
        assert definition.endswith("INCLUDE (document_id)")
