"""``manage.py vector_indexes``: the index of each vector size, building the missing ones
concurrently with their progress, and the stores that need none."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from cogitator_memory.embeddings.models import Embedding
from cogitator_memory.embeddings.registry import get_embedding_store
from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.embeddings.types import NewEmbedding
from cogitator_memory.management.commands import vector_indexes
from tests.embeddings.pgvector_support import drop_indexes, index_is_valid

TABLE = Embedding._meta.db_table


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("vector_indexes", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def new(source_id: str, vector: list[float]) -> NewEmbedding:
    return NewEmbedding("item", source_id, vector, content=source_id)


@pytest.fixture
def pgvector_configured() -> Iterator[None]:
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"STORE": "pgvector"}}):
        yield


# --- stores without indexes of their own -------------------------------------------------


@pytest.mark.django_db
@override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"STORE": "exact"}})
@pytest.mark.parametrize("args", [(), ("--create",), ("--create", "--check")])
def test_the_exact_store_needs_no_index_and_the_command_succeeds(args: tuple[str, ...]) -> None:
    # when
    output = run(*args)

    # then
    assert output == (
        "The exact store compares every vector in process and needs no index: "
        "nothing to list or build.\n"
    )


# --- the pgvector store ------------------------------------------------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_create_builds_the_missing_indexes_and_searches_then_use_them(
    pgvector_configured: None,
) -> None:
    # given: vectors of 3 and 5 dimensions, no index for either
    store = get_embedding_store()
    store.add([new("x", [1, 0, 0]), new("y", [0, 1, 0]), new("five", [1, 0, 0, 0, 0])])
    try:
        before = run()

        # when
        with CaptureQueriesContext(connection) as queries:
            created = run("--create")
        after = run()

        # then
        assert before == (
            "dimensions          rows  index               status\n"
            "         3             2  cm_emb_hnsw_3       missing\n"
            "         5             1  cm_emb_hnsw_5       missing\n"
            "Missing: cm_emb_hnsw_3, cm_emb_hnsw_5. Searches of those sizes read every row. "
            "Build them with: manage.py vector_indexes --create\n"
        )
        assert "Building cm_emb_hnsw_3 (3 dimensions, 2 rows) concurrently...\n" in created
        assert "Building cm_emb_hnsw_5 (5 dimensions, 1 row) concurrently...\n" in created
        assert created.endswith("Every size has its index.\n")
        builds = [q["sql"] for q in queries.captured_queries if "CREATE INDEX" in q["sql"]]
        assert [sql.split(" ON ")[0] for sql in builds] == [
            'CREATE INDEX CONCURRENTLY "cm_emb_hnsw_3"',
            'CREATE INDEX CONCURRENTLY "cm_emb_hnsw_5"',
        ]
        assert after == (
            "dimensions          rows  index               status\n"
            "         3             2  cm_emb_hnsw_3       ready\n"
            "         5             1  cm_emb_hnsw_5       ready\n"
            "Every size has its index.\n"
        )
        with transaction.atomic(), connection.cursor() as cursor:
            # Scans and sorts made costly: on a table this small the planner would rather
            # read every row, which a large table does not allow.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_sort = off")
            with CaptureQueriesContext(connection) as searched:
                hits = store.search([1, 0.1, 0], limit=2)
            statement = next(q["sql"] for q in searched.captured_queries if "<=>" in q["sql"])
            cursor.execute(f"EXPLAIN {statement}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "Index Scan using cm_emb_hnsw_3" in plan
        assert [hit.embedding.source_id for hit in hits] == ["x", "y"]
    finally:
        drop_indexes("cm_emb_hnsw_3", "cm_emb_hnsw_5")


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_check_exits_with_status_1_while_an_index_is_missing(pgvector_configured: None) -> None:
    # given
    get_embedding_store().add([new("x", [1, 0, 0])])

    # when
    with pytest.raises(CommandError) as raised:
        run("--check")

    # then
    assert raised.value.returncode == 1
    assert str(raised.value) == "Vector indexes are missing."


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_dimensions_names_a_size_not_stored_yet_and_create_builds_its_index(
    pgvector_configured: None,
) -> None:
    # given: vectors of 3 dimensions only
    get_embedding_store().add([new("x", [1, 0, 0])])
    try:
        # when
        listed = run("--dimensions", "384")
        created = run("--dimensions", "384", "--create", "--check")

        # then: only the size named
        assert listed == (
            "dimensions          rows  index               status\n"
            "       384             0  cm_emb_hnsw_384     missing\n"
            "Missing: cm_emb_hnsw_384. Searches of that size read every row. "
            "Build it with: manage.py vector_indexes --create --dimensions 384\n"
        )
        assert "Building cm_emb_hnsw_384 (384 dimensions, 0 rows) concurrently...\n" in created
        assert created.endswith("Every size has its index.\n")
        assert [state.status for state in PgVectorEmbeddingStore().index_states()] == ["missing"]
    finally:
        drop_indexes("cm_emb_hnsw_384")


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_a_size_above_4000_dimensions_has_no_index_to_build(pgvector_configured: None) -> None:
    # when
    output = run("--dimensions", "4500", "--create")

    # then
    assert output == (
        "dimensions          rows  index               status\n"
        "      4500             0  -                   none (exact scan above 4000 dimensions)\n"
        "Every size has its index.\n"
    )


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_a_size_pgvector_cannot_hold_is_refused(pgvector_configured: None) -> None:
    # when
    with pytest.raises(CommandError) as raised:
        run("--dimensions", "0")

    # then
    assert str(raised.value) == "--dimensions must lie within 1..16000."


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_nothing_stored_and_no_size_configured_says_so(pgvector_configured: None) -> None:
    # when
    output = run()

    # then
    assert output == (
        "No vectors are stored and no size is configured: no index to build. "
        "--dimensions N names a size before its vectors are loaded.\n"
    )


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_without_the_extension_the_command_fails_naming_the_reason(
    pgvector_configured: None,
) -> None:
    # given
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION vector CASCADE")

    # when
    with pytest.raises(CommandError) as raised:
        run("--create")

    # then
    assert str(raised.value) == (
        "Vector search is unavailable: the pgvector extension is not installed in this database."
    )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_create_prints_the_phase_of_a_build_while_it_waits_for_writers(
    pgvector_configured: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given: a transaction that has written to the table and is still open, which a
    # concurrent build must wait for
    monkeypatch.setattr(vector_indexes, "PROGRESS_INTERVAL", 0.05)
    get_embedding_store().add([new("x", [1, 0, 0])])
    out = io.StringIO()
    errors: list[BaseException] = []

    def create() -> None:
        try:
            call_command("vector_indexes", "--create", stdout=out, stderr=io.StringIO())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    builder = threading.Thread(target=create)
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {TABLE} IN ROW EXCLUSIVE MODE")

            # when
            builder.start()
            deadline = time.monotonic() + 30
            while "waiting for writers" not in out.getvalue() and time.monotonic() < deadline:
                time.sleep(0.05)
            waiting = out.getvalue()
        builder.join(timeout=60)

        # then
        assert "  waiting for writers before build\n" in waiting
        assert "cm_emb_hnsw_3 ready after" not in waiting
        assert errors == []
        assert out.getvalue().endswith("Every size has its index.\n")
    finally:
        builder.join(timeout=60)
        drop_indexes("cm_emb_hnsw_3")


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_failed_build_is_reported_and_the_next_create_builds_the_index_again(
    pgvector_configured: None,
) -> None:
    # given: a writer's open transaction, and a build that gives up waiting for it
    get_embedding_store().add([new("x", [1, 0, 0])])
    locked, release = threading.Event(), threading.Event()

    def writer() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {TABLE} IN ROW EXCLUSIVE MODE")
                locked.set()
                release.wait(timeout=60)
        finally:
            connection.close()

    blocker = threading.Thread(target=writer)
    blocker.start()
    try:
        assert locked.wait(timeout=30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")

        # when
        with pytest.raises(CommandError) as raised:
            run("--create")
        release.set()
        blocker.join(timeout=60)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        left = index_is_valid("cm_emb_hnsw_3")
        again = run("--create")

        # then
        assert str(raised.value) == (
            "Building cm_emb_hnsw_3 failed: canceling statement due to lock timeout\n"
            "A half-built index is left invalid (no search uses it); --create drops and "
            "builds it again."
        )
        assert left is False
        assert "         3             1  cm_emb_hnsw_3       invalid\n" in again
        assert "Building cm_emb_hnsw_3 (3 dimensions, 1 row) concurrently...\n" in again
        assert index_is_valid("cm_emb_hnsw_3") is True
    finally:
        release.set()
        blocker.join(timeout=60)
        drop_indexes("cm_emb_hnsw_3")
