"""A lock wait that ran out is told from other database errors, whatever the driver."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import IntegrityError, OperationalError

from cogitator_memory.database_busy import database_busy_error
from cogitator_memory.exceptions import DatabaseBusy


class PostgresError(Exception):
    """A driver error as psycopg raises it, with its SQLSTATE."""

    def __init__(self, message: str, sqlstate: str) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


def wrapped(cause: Exception, wrapper: type[Exception] = OperationalError) -> Exception:
    """``cause`` as Django raises it: its own error class, the driver's as the cause."""
    error = wrapper(str(cause))
    error.__cause__ = cause
    return error


def sqlite_busy() -> Exception:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = 5  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    "error",
    [
        wrapped(sqlite_busy()),
        wrapped(sqlite3.OperationalError("database table is locked")),
        wrapped(PostgresError("canceling statement due to lock timeout", "55P03")),
        wrapped(PostgresError("could not serialize access", "40001")),
        wrapped(PostgresError("deadlock detected", "40P01")),
    ],
    ids=["sqlite-busy", "sqlite-locked", "lock-timeout", "serialization", "deadlock"],
)
def test_a_lock_wait_that_ran_out_is_a_busy_database(error: Exception) -> None:
    # when
    busy = database_busy_error(error)
    # then
    assert isinstance(busy, DatabaseBusy)
    assert busy.retry_after == 1
    assert busy.code == "database_busy"
    assert str(error.__cause__) in busy.message


@pytest.mark.parametrize(
    "error",
    [
        wrapped(sqlite3.OperationalError("no such table: cogitator_memory_thread")),
        wrapped(PostgresError("canceling statement due to statement timeout", "57014")),
        wrapped(PostgresError("duplicate key value", "23505"), IntegrityError),
        sqlite_busy(),  # not wrapped by Django: not an error of a connection of Django's
        RuntimeError("database is locked"),
    ],
    ids=["no-table", "statement-timeout", "integrity", "unwrapped", "not-a-database-error"],
)
def test_other_errors_are_not_a_busy_database(error: Exception) -> None:
    assert database_busy_error(error) is None
