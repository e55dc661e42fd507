from __future__ import annotations

import pytest
from django.db import connection


@pytest.fixture
def on_postgres() -> bool:
    return connection.vendor == "postgresql"


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
