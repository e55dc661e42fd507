"""A database that is locked, slow or gone: the API answers a JSON 503 with ``Retry-After``,
every other page a plain 503, never a 500; the next request after it works.

- a long write transaction of one connection (another tenant's, or a migration's table
  lock on PostgreSQL) makes another tenant's API write wait out the busy timeout;
- on PostgreSQL, the server's backends are terminated (``pg_terminate_backend``) while
  client threads send requests to the live server.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import User
from django.db import InterfaceError, OperationalError, connection, connections, transaction
from django.test import Client, RequestFactory
from pytest_django.live_server_helper import LiveServer
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from cogitator_memory.api.exceptions import database_busy_error
from cogitator_memory.api.handlers import server_error
from cogitator_memory.api.middleware import DatabaseUnavailableMiddleware
from cogitator_memory.exceptions import DatabaseBusy, DatabaseUnavailable
from cogitator_memory.threads import services
from cogitator_memory.threads.models import Thread
from tests.api.conftest import API, PASSWORD, assert_error

BUSY_CODES = {"database_busy", "database_unavailable"}


def wrapped(cause: Exception, wrapper: type[Exception] = OperationalError) -> Exception:
    error = wrapper(str(cause))
    error.__cause__ = cause
    return error


class PostgresError(Exception):
    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


# psycopg's errors are of module psycopg: a driver error with no SQLSTATE is a broken socket.
PsycopgError = type("OperationalError", (Exception,), {"__module__": "psycopg"})
# One of psycopg's subclasses (errors.AdminShutdown), raised by a cursor of psycopg's own
# that Django does not wrap.
PostgresDriverError = type(
    "AdminShutdown", (PostgresError, PsycopgError), {"__module__": "psycopg.errors"}
)


@pytest.mark.parametrize(
    "error",
    [
        wrapped(PostgresError("terminating connection due to administrator command", "57P01")),
        wrapped(PostgresError("the database system is shutting down", "57P03")),
        wrapped(PostgresError("connection failure", "08006")),
        wrapped(PsycopgError("server closed the connection unexpectedly")),
        InterfaceError("connection already closed"),
        PostgresDriverError("terminating connection due to administrator command", "57P01"),
    ],
    ids=[
        "terminated",
        "shutting-down",
        "connection-failure",
        "socket-closed",
        "closed",
        "unwrapped-terminated",
    ],
)
def test_a_broken_connection_is_an_unavailable_database(error: Exception) -> None:
    # when
    gone = database_busy_error(error)
    # then
    assert isinstance(gone, DatabaseUnavailable)
    assert gone.code == "database_unavailable"
    assert gone.retry_after == 5


def test_a_postgres_error_without_sqlstate_of_another_driver_is_not_unavailable() -> None:
    assert database_busy_error(wrapped(PostgresError("odd", None))) is None


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/api/memory/threads/", "application/json"), ("/admin/", "text/plain; charset=utf-8")],
)
def test_the_middleware_answers_a_busy_database_503_with_retry_after(
    path: str, content_type: str
) -> None:
    # given a view that met a locked database
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = 5  # type: ignore[attr-defined]
    middleware = DatabaseUnavailableMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]
    # when
    response = middleware.process_exception(RequestFactory().get(path), wrapped(error))
    # then
    assert response is not None
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response["Content-Type"] == content_type
    assert DatabaseBusy.public_message in response.content.decode()


def test_the_middleware_leaves_other_errors_to_django() -> None:
    middleware = DatabaseUnavailableMiddleware(lambda request: None)  # type: ignore[arg-type,return-value]
    request = RequestFactory().get("/admin/")
    assert middleware.process_exception(request, ValueError("a bug")) is None


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/api/memory/threads/", "application/json"), ("/admin/", "text/plain; charset=utf-8")],
)
def test_the_500_handler_answers_a_broken_connection_met_outside_a_view_503(
    path: str, content_type: str
) -> None:
    # given a connection that broke while a middleware saved the session
    request = RequestFactory().get(path)
    try:
        raise wrapped(PostgresError("terminating connection", "57P01"))
    except OperationalError:
        # when Django calls its 500 handler, as it does while handling the error
        response = server_error(request)
    # then
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response["Content-Type"] == content_type


def test_the_500_handler_keeps_a_500_for_a_bug() -> None:
    # given
    try:
        raise ValueError("a bug")
    except ValueError:
        # when
        api = server_error(RequestFactory().get("/api/memory/threads/"))
        page = server_error(RequestFactory().get("/admin/"))
    # then
    assert (api.status_code, api["Content-Type"]) == (500, "application/json")
    assert json.loads(api.content) == {
        "code": "server_error",
        "message": "Server error.",
        "errors": {},
    }
    assert page.status_code == 500
    assert page["Content-Type"].startswith("text/html")


# --- a long write transaction --------------------------------------------------------------


@pytest.fixture
def tenants(db: None) -> Iterator[tuple[APIClient, User]]:
    """Ana of agent-a (her token's client) and a superuser of the admin."""
    from cogitator_memory.access.models import Grant

    ana = User.objects.create_user("ana", password=PASSWORD)
    Grant.objects.create(user=ana, agent_id="agent-a")
    admin = User.objects.create_superuser("root", "root@example.com", PASSWORD)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=ana).key}")
    yield client, admin


def hold_a_long_write(
    holding: threading.Event,
    release: threading.Event,
    errors: list[BaseException],
    tables: tuple[str, ...],
) -> None:
    """Another tenant's long write: on SQLite its transaction holds the database's write
    lock; on PostgreSQL it also locks ``tables`` as a migration would."""
    try:
        with transaction.atomic():
            services.create_thread("agent-b", {"userId": "u9"})
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    for table in tables:
                        cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            holding.set()
            release.wait(timeout=60)
    except BaseException as error:  # reported by the test, not lost in the thread
        errors.append(error)
        holding.set()
    finally:
        connection.close()


def while_held(act: Callable[[], Any], tables: tuple[str, ...] = (Thread._meta.db_table,)) -> Any:
    holding, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    holder = threading.Thread(target=hold_a_long_write, args=(holding, release, errors, tables))
    holder.start()
    assert holding.wait(timeout=30)
    try:
        assert errors == []
        return act()
    finally:
        release.set()
        holder.join(timeout=60)


@pytest.mark.django_db(transaction=True)
def test_a_write_during_another_tenants_long_write_is_a_json_503(
    tenants: tuple[APIClient, User], short_lock_waits: None
) -> None:
    # given
    client, _admin = tenants
    # when ana writes while agent-b's long write holds the lock
    response = while_held(
        lambda: client.post(
            f"{API}/threads/", {"agent_id": "agent-a", "metadata": {"userId": "u1"}}, format="json"
        )
    )
    # then
    body = assert_error(response, 503, "database_busy")
    assert response["Retry-After"] == "1"
    assert body["message"] == DatabaseBusy.public_message
    assert not Thread.objects.filter(agent_id="agent-a").exists()
    # and once the write is over, the same request works
    again = client.post(
        f"{API}/threads/", {"agent_id": "agent-a", "metadata": {"userId": "u1"}}, format="json"
    )
    assert again.status_code == 201, again.content[:300]


@pytest.mark.django_db(transaction=True)
def test_an_admin_login_during_a_long_write_is_a_plain_503(
    tenants: tuple[APIClient, User], short_lock_waits: None
) -> None:
    # given: the login writes the session and the last login
    browser = Client(raise_request_exception=False)
    form = {"username": "root", "password": PASSWORD}
    # when
    response = while_held(
        lambda: browser.post("/admin/login/?next=/admin/", form), tables=(User._meta.db_table,)
    )
    # then: a page that says to try again, not a 500
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert "try again in a moment" in response.content.decode()
    assert browser.post("/admin/login/?next=/admin/", form).status_code == 302


# --- connections killed under load (PostgreSQL) --------------------------------------------

CLIENTS = 3
KILL_ROUNDS = 25


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_terminated_backends_under_load_answer_503_never_500(live_server: LiveServer) -> None:
    # given a tenant with a thread, and clients that read and write it over HTTP
    ana = User.objects.create_user("ana", password=PASSWORD)
    from cogitator_memory.access.models import Grant

    Grant.objects.create(user=ana, agent_id="agent-a")
    token = Token.objects.create(user=ana).key
    thread_id = services.create_thread("agent-a", {"userId": "u1"}).pk
    own_pid = connection.cursor().connection.info.backend_pid
    answers: list[tuple[int, str, str, str]] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def client_loop(n: int) -> None:
        headers = {"Authorization": f"Token {token}"}
        with httpx.Client(base_url=live_server.url, headers=headers, timeout=30) as http:
            step = 0
            while not stop.is_set():
                step += 1
                try:
                    if step % 2:
                        response = http.get(f"{API}/threads/{thread_id}/entries/")
                    else:
                        response = http.post(
                            f"{API}/threads/{thread_id}/entries/",
                            json={"role": "user", "content": f"client {n} step {step}"},
                        )
                except httpx.HTTPError as error:
                    failures.append(error)
                    return
                code = ""
                if response.status_code >= 500:
                    code = response.json().get("code", "") if _is_json(response) else ""
                answers.append(
                    (
                        response.status_code,
                        response.headers.get("content-type", ""),
                        response.headers.get("retry-after", ""),
                        code,
                    )
                )

    # when the server's backends are terminated again and again while they work
    workers = [threading.Thread(target=client_loop, args=(n,)) for n in range(CLIENTS)]
    for worker in workers:
        worker.start()
    killer = connections.create_connection("default")
    terminated = 0
    try:
        for _ in range(KILL_ROUNDS):
            with killer.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                    "FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid NOT IN (pg_backend_pid(), %s) AND backend_type = 'client backend'",
                    [own_pid],
                )
                terminated += cursor.fetchone()[0]
            stop.wait(0.05)
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=60)
        killer.close()

    # then: every answer is a success, a client error or a JSON 503 with Retry-After
    assert failures == []
    assert terminated > 0
    statuses = Counter(status for status, *_ in answers)
    assert all(status < 500 or status == 503 for status in statuses), statuses
    for status, content_type, retry_after, code in answers:
        if status == 503:
            assert content_type == "application/json"
            assert retry_after.isdigit()
            assert code in BUSY_CODES
    # and the first request after it works
    with httpx.Client(base_url=live_server.url, headers={"Authorization": f"Token {token}"}) as h:
        after = h.post(
            f"{API}/threads/{thread_id}/entries/", json={"role": "user", "content": "ok"}
        )
    assert after.status_code == 201, after.text[:300]


def _is_json(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("application/json")
