from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.db.backends.base.operations import BaseDatabaseOperations
from django.test.testcases import QuietWSGIRequestHandler
from hypothesis import settings as hypothesis_settings

from tests.examples import DEFAULT_CI, DEFAULT_FULL, PROFILE

# The live server's sockets send each write at once (TCP_NODELAY). With Nagle's algorithm
# on, the body written after the headers waited for the client's delayed ACK: about 40 ms
# added to every keep-alive request, most of the time of the tests that make thousands.
QuietWSGIRequestHandler.disable_nagle_algorithm = True

# A transactional test (transaction=True, live_server) ends with Django's flush of every
# table, then post_migrate writes the content types and permissions again. Two shortcuts,
# with the same rows left for the next test:
# - content types and permissions are not flushed: post_migrate then finds them all and
#   writes nothing (about 0.3 s a flush); no test adds or removes any;
# - on PostgreSQL, DELETE, not one TRUNCATE of every table, which gives each table and
#   index a new file: about half a second a flush, for tables that hold a few rows. The
#   flush runs in a transaction, where the foreign keys (deferred, as Django makes them)
#   are checked once at its end, when nothing is left.
KEPT_TABLES = frozenset({"django_content_type", "auth_permission"})
_operations = type(connection.ops)
_flush = _operations.sql_flush


def _flush_keeping(
    self: BaseDatabaseOperations,
    style: Any,
    tables: list[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    flushed = [table for table in tables if table not in KEPT_TABLES]
    if self.connection.vendor == "postgresql" and not (reset_sequences or allow_cascade):
        return [f"DELETE FROM {self.quote_name(table)};" for table in flushed]
    return _flush(
        self, style, flushed, reset_sequences=reset_sequences, allow_cascade=allow_cascade
    )


_operations.sql_flush = _flush_keeping  # type: ignore[method-assign]

# COGITATOR_TEST_PROFILE (tests/examples.py) picks the Hypothesis profile: the count of
# examples of the tests that name none. Tests that name theirs take it from
# tests.examples.examples(full, ci).
hypothesis_settings.register_profile("full", max_examples=DEFAULT_FULL)
hypothesis_settings.register_profile("ci", max_examples=DEFAULT_CI)
hypothesis_settings.load_profile(PROFILE)


@pytest.fixture
def on_postgres() -> bool:
    return connection.vendor == "postgresql"


@pytest.fixture
def short_lock_waits() -> Iterator[None]:
    """Connections opened during the test wait at most half a second for a lock: SQLite's
    busy timeout, PostgreSQL's ``lock_timeout``. Set in the connection settings (shared by
    the connections of every Python thread), so tests of a busy database are fast."""
    options = connection.settings_dict["OPTIONS"]
    kept = dict(options)
    if connection.vendor == "sqlite":
        options["timeout"] = 0.5
    else:
        options["options"] = "-c lock_timeout=500"
    connection.close()
    try:
        yield
    finally:
        options.clear()
        options.update(kept)
        connection.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A test marked postgres_only checks what only a server database can do (row locks
    # under real concurrency); on SQLite it is deselected, not skipped, and listed.
    if connection.vendor == "postgresql":
        return
    kept, deselected = [], []
    for item in items:
        (deselected if item.get_closest_marker("postgres_only") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
