"""A writer of memory files in a process of its own, for the racing tests.

Started with ``multiprocessing`` (spawn): the process sets Django up with the project's
settings on the test database, told by ``DATABASE_URL`` (as ``tests/tasks/workers.py``
tells a Celery worker), so it shares nothing with the test process but the database.
Nothing Django is imported before ``django.setup()``.
"""

from __future__ import annotations

import os
import re
from typing import Any

COUNTER = re.compile(r"count: (\d+)")


def edit_counter(
    database_url: str, writer: int, path: str, edits: int, start: Any, results: Any
) -> None:
    """Read the counter at ``path`` and add one to it, ``edits`` times, each edit taking
    the version it read as its precondition; put ``(writer, counts)`` on ``results``, or
    ``(writer, error)`` when anything else than a conflict went wrong."""
    os.environ.pop("COGITATOR_TEST_DATABASE", None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="project.settings",
        DATABASE_URL=database_url,
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY="tests-only-not-a-secret",
        COGITATOR_MEMORY_LOG_LEVEL="WARNING",
    )
    import django

    django.setup()
    from django.db import connection

    from cogitator_memory.exceptions import FileVersionConflict
    from cogitator_memory.files.access import FileAccess, SeenVersions
    from cogitator_memory.files.services import MemoryFiles
    from cogitator_memory.grants import MemoryScope

    counts = {"successes": 0, "conflicts": 0, "attempts": 0}
    try:
        files = MemoryFiles()
        access = FileAccess(scope=MemoryScope("concierge", user_id="ana"), seen=SeenVersions())
        start.wait(timeout=60)
        for _ in range(edits):
            view = files.run(access, {"command": "view", "path": path})
            found = COUNTER.search(view)
            assert found is not None, view
            number = int(found[1])
            counts["attempts"] += 1
            try:
                files.run(
                    access,
                    {
                        "command": "str_replace",
                        "path": path,
                        "old_str": f"count: {number}\n",
                        "new_str": f"count: {number + 1}\n",
                    },
                )
                counts["successes"] += 1
            except FileVersionConflict:  # ConcurrentFileChange included
                counts["conflicts"] += 1
        results.put((writer, counts))
    except BaseException as error:  # reported to the test, which fails with it
        results.put((writer, f"{type(error).__name__}: {error}"))
    finally:
        connection.close()
