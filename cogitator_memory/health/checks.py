"""The checks of readiness: each takes a deadline (``time.monotonic()``) and gives an
``Outcome``, a status and a short reason.

Every check bounds its own waits below the deadline: the database's connect timeout and
``statement_timeout``, the broker's socket timeouts and connection retries, the wait for a
worker's reply. So a stalled database or Redis costs a check its answer, not a thread for
good; ``report.health_check()`` runs the checks side by side and fails one still running
at the deadline.

A check's status:

- ``pass``: the service answered, or the setting is in place;
- ``warn``: it works, with something to look at (a missing vector index, a model client
  that cannot be built while nothing enabled needs one); readiness still holds;
- ``skip``: the check does not apply here (pgvector on SQLite, a broker in eager mode, no
  model provider while nothing needs one); not a failure;
- ``fail``: not ready.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import load_backend
from kombu.utils.url import maybe_sanitize_url

from cogitator_memory.conf import memory_settings

PASS = "pass"
WARN = "warn"
SKIP = "skip"
FAIL = "fail"

# The longest wait of one step (a connect, a statement, a socket read): below the default
# bound of the whole report (report.DEFAULT_TIMEOUT), so a check answers before it.
STEP_SECONDS = 2.0
# How long a check waits for a worker's reply to its ping.
PING_SECONDS = 1.0
# What a check keeps of its deadline to build its answer.
MARGIN_SECONDS = 0.25
# The longest reason, so an error message cannot fill the answer.
REASON_LENGTH = 240


@dataclass(frozen=True)
class Outcome:
    status: str
    reason: str


@dataclass(frozen=True)
class CheckResult:
    """One check of a report: its name, status, short reason and the seconds it took."""

    name: str
    status: str
    reason: str
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
        }


def seconds_left(deadline: float, cap: float = STEP_SECONDS) -> float:
    """Seconds one step may wait: at most ``cap``, and done before the deadline."""
    return max(0.05, min(cap, deadline - time.monotonic() - MARGIN_SECONDS))


def describe(error: BaseException) -> str:
    """An error on one short line: its class and the first words of its message."""
    text = " ".join(str(error).split())
    described = f"{type(error).__name__}: {text}" if text else type(error).__name__
    if len(described) > REASON_LENGTH:
        described = described[: REASON_LENGTH - 3] + "..."
    return described


# --- the database ---------------------------------------------------------------------------


def database_name(alias: str) -> str:
    return "database" if alias == DEFAULT_DB_ALIAS else f"database:{alias}"


def database_target(alias: str) -> tuple[str, ...]:
    """What a database check reaches, to tell two checks of one database apart."""
    settings_dict = connections.settings[alias]
    return tuple(
        str(settings_dict.get(key) or "") for key in ("ENGINE", "NAME", "HOST", "PORT", "USER")
    )


def database_vendor(alias: str) -> str:
    """The vendor of ``alias``, read from its backend without connecting."""
    backend = load_backend(connections.settings[alias]["ENGINE"])
    return str(backend.DatabaseWrapper.vendor)


@contextmanager
def bounded_connection(alias: str, seconds: float) -> Iterator[BaseDatabaseWrapper]:
    """A connection of its own to ``alias`` that waits at most ``seconds`` to connect and
    (on PostgreSQL) for each statement; closed afterwards. The connections of requests are
    not touched, and a pool in the settings is not used."""
    settings_dict = {**connections.settings[alias]}
    options = {**settings_dict.get("OPTIONS", {})}
    options.pop("pool", None)
    settings_dict.update(CONN_MAX_AGE=0, CONN_HEALTH_CHECKS=False, OPTIONS=options)
    wrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, alias)
    if wrapper.vendor == "postgresql":
        # libpq counts whole seconds, and waits at least 2.
        options["connect_timeout"] = max(2, math.ceil(seconds))
    elif wrapper.vendor == "sqlite":
        # How long a statement waits for another connection's lock.
        options["timeout"] = seconds
    try:
        wrapper.ensure_connection()
        if wrapper.vendor == "postgresql":
            with wrapper.cursor() as cursor:
                cursor.execute(f"SET statement_timeout = {max(1, int(seconds * 1000))}")
        yield wrapper
    finally:
        wrapper.close()


@contextmanager
def serving_this_thread(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """``connections[alias]`` is ``connection`` in this thread meanwhile, so code that looks
    its connection up by alias (the ORM, the embedding store) uses it. Only for the threads of
    ``report.py``, which hold no connection of their own."""
    connections[connection.alias] = connection
    try:
        yield
    finally:
        del connections[connection.alias]


def check_database(alias: str, deadline: float) -> Outcome:
    """``SELECT 1`` on a connection of its own, within the deadline."""
    try:
        with bounded_connection(alias, seconds_left(deadline)) as connection:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                row = cursor.fetchone()
            vendor = connection.vendor
    except Exception as error:
        return Outcome(FAIL, f"no answer to SELECT 1: {describe(error)}")
    if row is None or row[0] != 1:
        return Outcome(FAIL, f"SELECT 1 answered {row!r}")
    return Outcome(PASS, f"{vendor} answered SELECT 1")


# --- pgvector -------------------------------------------------------------------------------


def check_pgvector(alias: str, deadline: float) -> Outcome:
    """On PostgreSQL, whether the pgvector store can search: the extension and the column
    are there, and the stored vectors have the configured size. Elsewhere not applicable."""
    vendor = database_vendor(alias)
    if vendor != "postgresql":
        return Outcome(SKIP, f"not applicable: {vendor} has no pgvector")
    embeddings = memory_settings.EMBEDDINGS
    store = embeddings.get("STORE") or "auto"
    if store not in ("auto", "pgvector"):
        return Outcome(SKIP, f"not used: the vector store is {store!r}")
    # Imported here: SQLite never needs them (numpy, pgvector's Django fields).
    from cogitator_memory.embeddings.schema import configured_dimensions
    from cogitator_memory.embeddings.stores.pgvector import PgVectorEmbeddingStore
    from cogitator_memory.embeddings.stores.pgvector_native import read_native_state

    try:
        with (
            bounded_connection(alias, seconds_left(deadline)) as connection,
            serving_this_thread(connection),
        ):
            state = read_native_state(connection)
            status = PgVectorEmbeddingStore(dimensions=configured_dimensions()).vector_status()
    except Exception as error:
        return Outcome(FAIL, f"pgvector's state could not be read: {describe(error)}")
    if status.available:
        size = (
            f"{status.dimensions} dimensions"
            if status.dimensions
            else "no size yet (no vectors stored, no DIMENSIONS set)"
        )
        if status.missing_indexes:
            return Outcome(WARN, f"pgvector {state.extension_version}, {size}; {status.hint}")
        return Outcome(PASS, f"pgvector {state.extension_version}, {size}")
    reason = status.reason or "vector search is unavailable"
    if not state.available:
        if store == "pgvector":
            return Outcome(FAIL, f"{reason}, and EMBEDDINGS STORE is 'pgvector'")
        return Outcome(WARN, f"{reason}; vectors are searched by the exact store instead")
    # The extension is there, but the stored vectors do not have the configured size.
    if embeddings.get("PROVIDER") or store == "pgvector":
        return Outcome(FAIL, reason)
    return Outcome(WARN, f"{reason} (no embeddings provider is configured)")


# --- Celery ---------------------------------------------------------------------------------


def eager(app: Any) -> bool:
    return bool(app.conf.task_always_eager)


def broker_target(app: Any) -> tuple[str, bool]:
    """The broker's URL without its password, and whether it is Redis (no connection is
    made)."""
    connection = app.connection_for_write()
    try:
        url = maybe_sanitize_url(connection.as_uri(include_password=True))
        return str(url), connection.transport.driver_type == "redis"
    finally:
        connection.release()


@contextmanager
def bounded_broker(app: Any, seconds: float) -> Iterator[Any]:
    """A connection of its own to the app's broker, connected with no retry, each socket
    step bounded by ``seconds``; released afterwards."""
    _target, redis = broker_target(app)
    transport_options: dict[str, Any] = {"max_retries": 0}
    if redis:
        transport_options.update(socket_timeout=seconds, socket_connect_timeout=seconds)
    connection = app.connection_for_write(
        connect_timeout=seconds, transport_options=transport_options
    )
    try:
        # On Redis, kombu's first channel sends PING.
        connection.ensure_connection(max_retries=0, timeout=seconds)
        yield connection
    finally:
        connection.release()


NOT_NEEDED = "not needed: tasks run eagerly in the process that sends them (no CELERY_BROKER_URL)"


def check_broker(app: Any, deadline: float) -> Outcome:
    """The Celery broker answers (Redis: a PING), unless tasks run eagerly."""
    if eager(app):
        return Outcome(SKIP, NOT_NEEDED)
    target, redis = broker_target(app)
    try:
        with bounded_broker(app, seconds_left(deadline)):
            pass
    except Exception as error:
        return Outcome(FAIL, f"the broker {target} did not answer: {describe(error)}")
    return Outcome(PASS, f"the broker {target} answered{' PING' if redis else ''}")


def check_worker(app: Any, deadline: float) -> Outcome:
    """A Celery worker answers a ping through the broker within ``PING_SECONDS``, unless
    tasks run eagerly. A worker answers control messages between tasks; a prefork worker's
    main process at any time."""
    if eager(app):
        return Outcome(SKIP, NOT_NEEDED)
    target, _redis = broker_target(app)
    try:
        with bounded_broker(app, seconds_left(deadline)) as connection:
            wait = seconds_left(deadline, PING_SECONDS)
            replies = app.control.ping(connection=connection, timeout=wait, limit=1)
    except Exception as error:
        return Outcome(
            FAIL, f"no worker can be seen: the broker {target} did not answer ({describe(error)})"
        )
    names = [str(name) for reply in replies or [] for name in reply]
    if not names:
        return Outcome(FAIL, f"no worker answered a ping through {target} within {wait:.1f} s")
    return Outcome(PASS, f"{names[0]} answered a ping")


# --- the model ------------------------------------------------------------------------------


def model_users() -> list[str]:
    """The enabled work that needs the model of ``COGITATOR_MEMORY["LLM"]``."""
    return [
        name
        for name, section in (
            ("extraction", memory_settings.EXTRACTION),
            ("compaction", memory_settings.COMPACTION),
        )
        if section.get("ENABLED")
    ]


def check_model(deadline: float) -> Outcome:
    """Whether a model provider is configured and its client can be built (no request is
    sent). Its absence fails only when enabled work needs it (extraction, compaction)."""
    from cogitator_memory.llm.registry import get_summarizer

    users = model_users()
    needed_by = " and ".join(users)
    provider = memory_settings.LLM.get("PROVIDER")
    if not provider:
        if users:
            return Outcome(
                FAIL,
                f"no model provider (COGITATOR_MEMORY['LLM']['PROVIDER']), "
                f"and {needed_by} {'is' if len(users) == 1 else 'are'} enabled",
            )
        return Outcome(
            SKIP, "not configured: model-backed work is off, and nothing enabled needs it"
        )
    try:
        get_summarizer()
    except Exception as error:
        status = FAIL if users else WARN
        return Outcome(status, f"provider {provider!r} cannot be built: {describe(error)}")
    model = memory_settings.LLM.get("MODEL")
    named = f"provider {provider!r}" + (f", model {model!r}" if model else "")
    return Outcome(PASS, f"{named}" + (f"; used by {needed_by}" if users else ""))
