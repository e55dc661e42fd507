"""One error shape for every failed request, and the map from typed errors to statuses.

Every error body is ``{"code": str, "message": str, "errors": {field: [message, ...]}}``;
``errors`` is empty when no field is to blame. Nested serializer errors are flattened to
dotted field names (``metadata.userId``).

A lock wait of the database that ran out is answered here, for every view, as
``DatabaseBusy``: 503 ``database_busy`` with a ``Retry-After`` header, not Django's HTML
page of a 500; a connection that broke as ``DatabaseUnavailable`` (503
``database_unavailable``). ``database_busy_error`` is the one place that knows how the
drivers say it:

- SQLite: ``database is locked`` (``SQLITE_BUSY``) once the connection's busy timeout
  (``OPTIONS["timeout"]``, ``DATABASE_BUSY_TIMEOUT`` in the project's settings) has passed
  while another connection held the write lock, or ``database table is locked``
  (``SQLITE_LOCKED``);
- PostgreSQL: ``lock_not_available`` (55P03) when a wait passed ``lock_timeout``,
  ``query_canceled`` (57014) when a statement passed ``statement_timeout`` (both set in
  ``OPTIONS["options"]`` by the project's settings), ``serialization_failure`` (40001) and
  ``deadlock_detected`` (40P01);
- a broken connection: PostgreSQL's ``admin_shutdown`` and its kin (57P01 to 57P03, a
  backend ended by ``pg_terminate_backend`` or a server going down), a connection class
  error (08...), an error of the driver with no SQLSTATE (the server closed the socket),
  and Django's ``InterfaceError`` for a connection that is already closed.

Each refused the statement and rolled its transaction back; the same request made again
later can succeed. ``project.middleware`` answers the same errors outside the API.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from cogitator_memory.exceptions import (
    CogitatorMemoryError,
    Conflict,
    DatabaseBusy,
    DatabaseUnavailable,
    Forbidden,
    InvalidInput,
    NotFound,
    ServiceFailed,
)

logger = logging.getLogger(__name__)

# (error class, HTTP status) in the order they are tried: subclasses first.
DOMAIN_STATUSES: list[tuple[type[CogitatorMemoryError], int]] = [
    (NotFound, status.HTTP_404_NOT_FOUND),
    (InvalidInput, status.HTTP_400_BAD_REQUEST),
    (Forbidden, status.HTTP_403_FORBIDDEN),
    (Conflict, status.HTTP_409_CONFLICT),
    (ServiceFailed, status.HTTP_503_SERVICE_UNAVAILABLE),
    (CogitatorMemoryError, status.HTTP_400_BAD_REQUEST),
]


# SQLite's primary result codes (the low byte of an extended code).
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_BUSY_MESSAGES = ("database is locked", "database table is locked")
POSTGRES_BUSY_STATES = {
    "55P03": "a lock wait passed lock_timeout",
    "57014": "a statement passed statement_timeout",
    "40001": "a serialization failure",
    "40P01": "a deadlock",
}
# The server ended the session (pg_terminate_backend, a shutdown, a crash, still starting).
POSTGRES_GONE_STATES = {"57P01", "57P02", "57P03"}
# SQLSTATE class 08: connection exceptions.
POSTGRES_CONNECTION_CLASS = "08"

TOO_LARGE_MESSAGE = (
    "The request body is larger than the server accepts (DATA_UPLOAD_MAX_MEMORY_SIZE)."
)


def is_psycopg_connection_error(error: BaseException) -> bool:
    """Whether ``error`` is psycopg's own ``OperationalError`` or ``InterfaceError`` (or a
    subclass, such as ``errors.AdminShutdown``), found without importing psycopg."""
    return any(
        cls.__module__.split(".")[0] == "psycopg"
        and cls.__name__ in ("OperationalError", "InterfaceError")
        for cls in type(error).__mro__
    )


def database_busy_error(error: BaseException) -> DatabaseBusy | None:
    """``DatabaseBusy`` for an error of a lock wait or a statement that ran out,
    ``DatabaseUnavailable`` for a broken connection (see the module docstring), None for
    any other error."""
    if isinstance(error, InterfaceError):
        # Django's own, for a connection closed under it, or the driver's for the same.
        return DatabaseUnavailable(str(error.__cause__ or error))
    if isinstance(error, OperationalError):
        # Django wraps the driver's error; the driver's own is its cause.
        cause = error.__cause__ or error
    elif is_psycopg_connection_error(error):
        # A statement sent on psycopg's own cursor (keywords/postings.py) is not wrapped.
        cause = error
    else:
        return None
    code = getattr(cause, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED):
        return DatabaseBusy(f"SQLite: {cause}")
    if str(cause).startswith(SQLITE_BUSY_MESSAGES):
        return DatabaseBusy(f"SQLite: {cause}")
    state = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if state in POSTGRES_BUSY_STATES:
        return DatabaseBusy(f"PostgreSQL: {POSTGRES_BUSY_STATES[state]} ({state}): {cause}")
    if state in POSTGRES_GONE_STATES or (state or "").startswith(POSTGRES_CONNECTION_CLASS):
        return DatabaseUnavailable(f"PostgreSQL ({state}): {cause}")
    if state is None and type(cause).__module__.startswith("psycopg"):
        # psycopg gives no SQLSTATE when the socket closed or could not be opened.
        return DatabaseUnavailable(f"PostgreSQL: {cause}")
    return None


def error_body(code: str, message: str, errors: dict[str, list[str]] | None = None) -> dict:
    return {"code": code, "message": message, "errors": errors or {}}


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as ``{dotted.field: [messages]}``."""
    flat: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            for field, messages in flatten_errors(value, name).items():
                flat.setdefault(field, []).extend(messages)
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, dict | list):
                for field, messages in flatten_errors(value, f"{prefix}.{index}").items():
                    flat.setdefault(field, []).extend(messages)
            else:
                flat.setdefault(prefix or "non_field_errors", []).append(str(value))
    else:
        flat.setdefault(prefix or "non_field_errors", []).append(str(detail))
    return flat


def memory_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler: typed errors and DRF's own, in one shape."""
    exc = database_busy_error(exc) or exc
    if isinstance(exc, CogitatorMemoryError):
        code = next(s for cls, s in DOMAIN_STATUSES if isinstance(exc, cls))
        if isinstance(exc, ServiceFailed):
            # The provider's own answer stays in the log; the client is told what to do.
            logger.warning("%s: %s", type(exc).__name__, exc.message)
            set_rollback()
            retry = {"Retry-After": str(exc.retry_after)} if isinstance(exc, DatabaseBusy) else {}
            return Response(error_body(exc.code, exc.public_message), status=code, headers=retry)
        # InvalidInput and some others (EntryNotInThread, a 404) name the fields to blame.
        carried = getattr(exc, "errors", None)
        errors = carried if isinstance(carried, dict) else {}
        set_rollback()
        return Response(error_body(exc.code, exc.message, errors), status=code)
    if isinstance(exc, RequestDataTooBig):
        set_rollback()
        return Response(
            error_body("request_too_large", TOO_LARGE_MESSAGE),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if not isinstance(exc, exceptions.APIException):
        return None
    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = str(exc.auth_header)  # type: ignore[attr-defined]
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]
    if isinstance(exc, exceptions.ValidationError):
        body = error_body("invalid", "The request has invalid fields.", flatten_errors(exc.detail))
    else:
        detail = exc.detail
        message = str(detail) if not isinstance(detail, dict | list) else "Request failed."
        body = error_body(str(exc.default_code), message)
    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)
