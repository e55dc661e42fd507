"""Whether a database error is a lock wait that ran out: the one place that knows how the
drivers say it.

- SQLite: ``database is locked`` (``SQLITE_BUSY``) once the connection's busy timeout
  (``OPTIONS["timeout"]``, 20 s in the project's settings) has passed while another
  connection held the write lock, or ``database table is locked`` (``SQLITE_LOCKED``).
- PostgreSQL: ``lock_not_available`` (55P03) when a wait passed ``lock_timeout`` (off by
  default; set it with ``OPTIONS["options"] = "-c lock_timeout=5s"``),
  ``serialization_failure`` (40001) and ``deadlock_detected`` (40P01): the statement was
  refused and its transaction must be rolled back, and the same request made again later
  can succeed.

The API's exception handler answers these as ``DatabaseBusy`` (503 with ``Retry-After``).
"""

from __future__ import annotations

from django.db import OperationalError

from cogitator_memory.exceptions import DatabaseBusy

__all__ = ["database_busy_error"]

# SQLite's primary result codes (the low byte of an extended code).
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_BUSY_MESSAGES = ("database is locked", "database table is locked")
POSTGRES_BUSY_STATES = {
    "55P03": "a lock wait passed lock_timeout",
    "40001": "a serialization failure",
    "40P01": "a deadlock",
}


def database_busy_error(error: BaseException) -> DatabaseBusy | None:
    """``DatabaseBusy`` for an error of a lock wait that ran out (see the module
    docstring), None for any other error."""
    if not isinstance(error, OperationalError):
        return None
    # Django wraps the driver's error; the driver's own is its cause.
    cause = error.__cause__ or error
    code = getattr(cause, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED):
        return DatabaseBusy(f"SQLite: {cause}")
    if str(cause).startswith(SQLITE_BUSY_MESSAGES):
        return DatabaseBusy(f"SQLite: {cause}")
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if state in POSTGRES_BUSY_STATES:
        return DatabaseBusy(f"PostgreSQL: {POSTGRES_BUSY_STATES[state]} ({state}): {cause}")
    return None
