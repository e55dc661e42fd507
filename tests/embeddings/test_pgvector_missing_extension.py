"""PostgreSQL without pgvector: everything else migrates and works, and vector operations
fail with an error naming the reason.

Two servers: the machine's Debian PostgreSQL (127.0.0.1:5432, trust auth), which has no
pgvector at all, gets a fresh database migrated by ``manage.py migrate`` in a subprocess
(the suite's own database is configured at start-up, so another one is used from another
process); and the suite's embedded PostgreSQL, where ``DROP EXTENSION vector CASCADE``
takes the extension away inside a test's transaction.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.schema import VectorSupport, ensure_vector_column, vector_support
from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.embeddings.types import EmbeddingFilter, NewEmbedding, VectorStatus
from cogitator_memory.exceptions import VectorSearchUnavailable

ROOT = Path(__file__).resolve().parents[2]
SERVER_URL = "postgres://postgres@127.0.0.1:5432"
NO_EXTENSION = "the pgvector extension is not installed in this database"
# The suite's settings and database must not leak into the project's settings.
LEAKING_VARIABLES = ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "COGITATOR_TEST_DATABASE")


# What the project does on that database, run in one ``manage.py shell`` (a Django
# start-up takes seconds); each check records its outcome, or its error, under its name.
CHECKS = r"""
import json, traceback
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.exceptions import VectorSearchUnavailable
from cogitator_memory.embeddings.types import NewEmbedding
from cogitator_memory.threads import selectors, services

def threads():
    thread = services.create_thread("agent-1", {"userId": "u1"})
    first = services.add_entry(thread.id, role="user", content="hello")
    services.add_entry(thread.id, role="assistant", content="hi there")
    fork = services.fork_thread(thread.id, first.id)
    return {
        "path": [entry.content for entry in selectors.get_path(thread.id)],
        "fork": [entry.content for entry in selectors.get_path(fork.id)],
        "threads": len(selectors.list_threads(agent_id="agent-1").threads),
    }

def pgvector_search():
    store = PgVectorEmbeddingStore()
    status = store.vector_status()
    try:
        store.search([1.0, 0.0])
        error = None
    except VectorSearchUnavailable as exc:
        error = {"code": exc.code, "message": exc.message}
    return {"available": status.available, "reason": status.reason, "error": error}

def pgvector_bytes():
    store = PgVectorEmbeddingStore()
    store.add([NewEmbedding("item", "bytes-1", [0.5, -0.25], metadata={"agentId": "a1"})])
    read = [embedding.vector for embedding in store.get_by_sources(["bytes-1"])]
    deleted = store.delete_by_sources(["bytes-1"])
    return {"read": read, "deleted": deleted, "left": store.get_by_sources(["bytes-1"])}

def auto_store():
    store = get_embedding_store()
    store.add([NewEmbedding("item", "near", [1.0, 0.1]), NewEmbedding("item", "far", [0.0, 1.0])])
    hits = store.search([1.0, 0.0], limit=2)
    return {"store": type(store).__name__, "hits": [hit.embedding.source_id for hit in hits]}

results = {}
for check in (threads, pgvector_search, pgvector_bytes, auto_store):
    try:
        results[check.__name__] = check()
    except Exception:
        results[check.__name__] = {"crashed": traceback.format_exc()}
print(json.dumps(results))
"""


@dataclass(frozen=True)
class DatabaseWithoutPgvector:
    migrate: subprocess.CompletedProcess[str]
    checks: dict[str, Any]


def run_project(database_url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in LEAKING_VARIABLES}
    environment.update(DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="project.settings")
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_checks(database_url: str) -> dict[str, Any]:
    done = run_project(database_url, "shell", "--no-imports", "-c", CHECKS)
    if done.returncode != 0:
        return {"shell": {"crashed": done.stderr}}
    results: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


@pytest.fixture(scope="module")
def without_pgvector() -> Iterator[DatabaseWithoutPgvector]:
    """A fresh database of the server without pgvector, migrated, and the checks run on
    it; dropped afterwards."""
    # CI runs on a machine whose Debian PostgreSQL is started before the tests: a server
    # that cannot be reached is a broken machine, reported as such, never a skip.
    try:
        admin = psycopg.connect(f"{SERVER_URL}/test", autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"The PostgreSQL server without pgvector at {SERVER_URL} is not reachable ({exc}). "
            "Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) "
            "main start"
        )
    name = f"cm_no_pgvector_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin:
        offered = admin.execute(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        if offered != (0,):
            pytest.fail(
                f"The server at {SERVER_URL} offers pgvector; these tests need one without."
            )
        admin.execute(f"CREATE DATABASE {name}")
        try:
            url = f"{SERVER_URL}/{name}"
            migrate = run_project(url, "migrate", "--no-input")
            checks = run_checks(url) if migrate.returncode == 0 else {}
            yield DatabaseWithoutPgvector(migrate, checks)
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def outcome(database: DatabaseWithoutPgvector, check: str) -> Any:
    assert database.migrate.returncode == 0, database.migrate.stderr
    assert "shell" not in database.checks, database.checks["shell"]["crashed"]
    result = database.checks[check]
    assert "crashed" not in result, result["crashed"]
    return result


# --- a server without pgvector ---------------------------------------------------------


def test_migrate_succeeds_on_a_server_without_pgvector_and_warns_why(
    without_pgvector: DatabaseWithoutPgvector,
) -> None:
    # given: the fixture ran manage.py migrate on a fresh database of that server

    # when
    done = without_pgvector.migrate

    # then
    assert done.returncode == 0, done.stderr
    assert "Applying cogitator_memory.0004_add_embeddings... OK" in done.stdout
    assert "Applying cogitator_memory.0007_add_vector_indexes_where_available... OK" in done.stdout
    assert (
        'pgvector is unavailable, vector search is off: extension "vector" is not available'
    ) in done.stdout + done.stderr


def test_threads_and_entries_work_on_a_server_without_pgvector(
    without_pgvector: DatabaseWithoutPgvector,
) -> None:
    # given: a thread with two entries and a fork of it, made on that database

    # when
    result = outcome(without_pgvector, "threads")

    # then
    assert result == {"path": ["hello", "hi there"], "fork": ["hello"], "threads": 2}


def test_the_pgvector_store_on_a_server_without_pgvector_names_the_reason(
    without_pgvector: DatabaseWithoutPgvector,
) -> None:
    # given: vector_status() and a search of the pgvector store on that database

    # when
    result = outcome(without_pgvector, "pgvector_search")

    # then
    assert result == {
        "available": False,
        "reason": NO_EXTENSION,
        "error": {
            "code": "vector_search_unavailable",
            "message": f"Vector search is unavailable: {NO_EXTENSION}.",
        },
    }


def test_the_pgvector_store_keeps_bytes_on_a_server_without_pgvector(
    without_pgvector: DatabaseWithoutPgvector,
) -> None:
    # given: an embedding added, read and deleted through the pgvector store there

    # when
    result = outcome(without_pgvector, "pgvector_bytes")

    # then
    assert result == {"read": [[0.5, -0.25]], "deleted": 1, "left": []}


def test_the_auto_store_on_a_server_without_pgvector_is_the_exact_store(
    without_pgvector: DatabaseWithoutPgvector,
) -> None:
    # given: the configured store ("auto") adds two embeddings and searches there

    # when
    result = outcome(without_pgvector, "auto_store")

    # then
    assert result == {"store": "ExactEmbeddingStore", "hits": ["near", "far"]}


# --- the embedded server, extension dropped --------------------------------------------


@pytest.fixture
def extension_dropped(db: None) -> None:
    """Drop pgvector (and with it the native column) in the test's transaction; the
    rollback at the end of the test brings both back."""
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION vector CASCADE")


def column_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_name = %s AND "
            "column_name = 'embedding'",
            [Embedding._meta.db_table],
        )
        return cursor.fetchone() is not None


@pytest.mark.postgres_only
def test_vector_support_reports_a_database_where_the_extension_was_dropped(
    extension_dropped: None,
) -> None:
    # given: the extension was dropped

    # when
    support = vector_support(connection)

    # then
    assert support == VectorSupport(False, NO_EXTENSION)


@pytest.mark.postgres_only
def test_ensure_vector_column_recreates_the_extension_and_the_column(
    extension_dropped: None,
) -> None:
    # given
    assert not column_exists()

    # when
    support = ensure_vector_column(connection)

    # then
    assert support == VectorSupport(True)
    assert column_exists()


@pytest.mark.postgres_only
def test_without_the_extension_vector_status_reports_why(extension_dropped: None) -> None:
    # given
    store = PgVectorEmbeddingStore(dimensions=2)

    # when
    status = store.vector_status()

    # then
    assert status == VectorStatus(available=False, dimensions=2, reason=NO_EXTENSION)


@pytest.mark.postgres_only
def test_without_the_extension_search_raises_vector_search_unavailable_naming_the_reason(
    extension_dropped: None,
) -> None:
    # given
    store = PgVectorEmbeddingStore()

    # when
    with pytest.raises(VectorSearchUnavailable) as raised:
        store.search([1.0, 0.0], filter=EmbeddingFilter(agent_id="a1"))

    # then
    assert raised.value.message == f"Vector search is unavailable: {NO_EXTENSION}."
    assert raised.value.reason == NO_EXTENSION


@pytest.mark.postgres_only
def test_without_the_extension_add_get_and_delete_work_on_the_bytes(
    extension_dropped: None,
) -> None:
    # given
    store = PgVectorEmbeddingStore()

    # when
    added = store.add([NewEmbedding("item", "s1", [0.5, -0.25], metadata={"agentId": "a1"})])
    read = store.get_by_sources(["s1"], filter=EmbeddingFilter(agent_id="a1"))
    deleted = store.delete_by_filter(EmbeddingFilter(agent_id="a1"))

    # then
    assert [embedding.id for embedding in read] == [added[0].id]
    assert read[0].vector == [0.5, -0.25]
    assert deleted == 1
    assert not Embedding.objects.exists()


@pytest.mark.postgres_only
def test_without_the_column_search_names_the_missing_column(db: None) -> None:
    # given
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {Embedding._meta.db_table} DROP COLUMN embedding")
    store = PgVectorEmbeddingStore()

    # when
    with pytest.raises(VectorSearchUnavailable) as raised:
        store.search([1.0, 0.0])

    # then
    assert raised.value.reason == (
        "the embeddings table has no vector column; run ensure_vector_column()"
    )


@pytest.mark.postgres_only
def test_rows_added_without_the_extension_are_found_once_it_is_back_and_synced(
    extension_dropped: None,
) -> None:
    # given
    store = PgVectorEmbeddingStore()
    store.add([NewEmbedding("item", "near", [1.0, 0.1]), NewEmbedding("item", "far", [0.0, 1.0])])
    ensure_vector_column(connection)

    # when
    filled = store.sync_native_column(concurrently=False)

    # then
    assert filled == 2
    hits = store.search([1.0, 0.0], limit=2)
    assert [hit.embedding.source_id for hit in hits] == ["near", "far"]
    assert store.vector_status().missing_indexes == ()
