"""The database and pgvector checks: a database that cannot be opened, refuses or hangs
makes /health/ready answer 503 within its bound (SQLite and PostgreSQL URLs alike, in both
suites), /health/live staying 200; on PostgreSQL, pgvector's state and the stored sizes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
from cogitator_memory.embeddings.types import NewEmbedding
from cogitator_memory.health.report import DEFAULT_TIMEOUT, health_check
from tests.health.project import ask_project, by_name, closed_port, stalled_port

SLACK_SECONDS = 1.0


def assert_database_down(answer: dict[str, Any]) -> dict[str, Any]:
    assert answer["ready"] == 503
    assert answer["seconds"] < DEFAULT_TIMEOUT + SLACK_SECONDS
    assert answer["live"] == 200
    database = by_name(answer["report"])["database"]
    assert database["status"] == "fail"
    assert database["reason"].startswith("no answer to SELECT 1: OperationalError")
    return database


def test_a_sqlite_file_that_cannot_be_opened_makes_ready_503() -> None:
    # when
    answer = ask_project(DATABASE_URL="sqlite:////nonexistent-folder/cogitator.sqlite3")
    # then
    database = assert_database_down(answer)
    assert "unable to open database file" in database["reason"]
    assert by_name(answer["report"])["pgvector"]["status"] == "skip"


def test_a_refusing_postgres_makes_ready_503() -> None:
    # when
    answer = ask_project(DATABASE_URL=f"postgres://memory:pw@127.0.0.1:{closed_port()}/memory")
    # then
    database = assert_database_down(answer)
    assert "Connection refused" in database["reason"]
    assert "pw" not in database["reason"].split()
    assert by_name(answer["report"])["pgvector"]["status"] == "fail"


def test_a_hanging_postgres_makes_ready_503_within_the_bound() -> None:
    # given: a server that accepts connections and never answers
    with stalled_port() as port:
        # when
        answer = ask_project(DATABASE_URL=f"postgres://memory:pw@127.0.0.1:{port}/memory")
    # then
    database = assert_database_down(answer)
    assert "timeout" in database["reason"].lower()


# pgvector, on this suite's PostgreSQL


@pytest.fixture
def stored_size_3() -> Iterator[None]:
    """One stored vector of 3 dimensions, committed, so the check's own connection sees it
    (the transactional test flushes it afterwards)."""
    PgVectorEmbeddingStore().add([NewEmbedding("item", "health-1", [0.1, 0.2, 0.3])])
    yield


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_stored_vectors_of_another_size_fail_pgvector_when_embeddings_are_on(
    stored_size_3: None, settings: Any
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": {"PROVIDER": "local", "DIMENSIONS": 4}}
    # when
    result = health_check()
    # then
    assert not result.ready
    assert result.check("pgvector").status == "fail"
    assert result.check("pgvector").reason == (
        "stored embeddings have 3 dimensions; the store is configured for 4"
    )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_stored_vectors_of_another_size_only_warn_without_an_embeddings_provider(
    stored_size_3: None, settings: Any
) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": {"DIMENSIONS": 4}}
    # when
    result = health_check()
    # then
    assert result.ready
    assert result.check("pgvector").status == "warn"
    assert "(no embeddings provider is configured)" in result.check("pgvector").reason


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_pgvector_reports_the_stored_size(stored_size_3: None) -> None:
    # when
    result = health_check()
    # then
    assert result.check("pgvector").status in ("pass", "warn")
    assert ", 3 dimensions" in result.check("pgvector").reason


@pytest.mark.django_db
def test_pgvector_is_not_checked_for_another_store(settings: Any) -> None:
    # given
    settings.COGITATOR_MEMORY = {"EMBEDDINGS": {"STORE": "exact"}}
    # when
    result = health_check()
    # then
    assert result.check("pgvector").status == "skip"
    assert result.check("pgvector").reason in (
        "not used: the vector store is 'exact'",
        "not applicable: sqlite has no pgvector",
    )
