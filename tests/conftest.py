from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.test.testcases import QuietWSGIRequestHandler
from hypothesis import settings as hypothesis_settings

from tests.examples import DEFAULT_CI, DEFAULT_FULL, PROFILE

# The live server's sockets send each write at once (TCP_NODELAY). With Nagle's algorithm
# on, the body written after the headers waited for the client's delayed ACK: about 40 ms
# added to every keep-alive request, most of the time of the tests that make thousands.
QuietWSGIRequestHandler.disable_nagle_algorithm = True

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
