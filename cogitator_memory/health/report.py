"""``health_check()``: is this deployment ready to serve? A report that never raises.

The checks (``checks.py``) run side by side in threads of their own, and the report is
made within ``timeout`` seconds (3 by default) whatever they meet: a check still running
then is reported failed ("no answer within 3 s"). Concurrent reports share a check that is
still running for the same target instead of starting it again, so at most one check of a
database or a broker is in flight at a time, however often a stalled service is probed (as
the specification's adapters deduplicate ``healthCheck()``).

The checks, in order: ``database`` (``SELECT 1``; one per database alias, the others named
``database:<alias>``), ``pgvector``, ``broker``, ``worker`` and ``model``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, wait
from dataclasses import dataclass
from functools import partial
from typing import Any

from celery.app import app_or_default
from django.db import connections, router

from cogitator_memory.conf import memory_settings
from cogitator_memory.health import checks
from cogitator_memory.health.checks import FAIL, PASS, WARN, CheckResult, Outcome, describe

# Seconds a report takes at most.
DEFAULT_TIMEOUT = 3.0
# Seconds after which a check still running is no longer shared with new reports.
STALE_SECONDS = 30.0


@dataclass(frozen=True)
class Check:
    """A check to run: ``key`` names what it reaches (two reports share a running check of
    the same key); ``run`` takes the deadline."""

    name: str
    key: Hashable
    run: Callable[[float], Outcome]


@dataclass(frozen=True)
class HealthReport:
    """The checks' results in order. ``status`` is ``fail`` when one failed, else ``warn``
    when one warned, else ``pass``; ``ready`` is whether none failed."""

    checks: tuple[CheckResult, ...]

    @property
    def status(self) -> str:
        statuses = {check.status for check in self.checks}
        if FAIL in statuses:
            return FAIL
        return WARN if WARN in statuses else PASS

    @property
    def ready(self) -> bool:
        return self.status != FAIL

    def check(self, name: str) -> CheckResult:
        """The result of the check called ``name``; KeyError when there is none."""
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "checks": [check.as_dict() for check in self.checks]}


def planned_checks(app: Any) -> list[Check]:
    """The checks of this deployment, for the Celery ``app``; reads the settings only."""
    from cogitator_memory.embeddings.models import Embedding

    planned = [
        Check(
            checks.database_name(alias),
            ("database", *checks.database_target(alias)),
            partial(checks.check_database, alias),
        )
        for alias in connections
    ]
    vectors = router.db_for_write(Embedding)
    embeddings = memory_settings.EMBEDDINGS
    planned.append(
        Check(
            "pgvector",
            (
                "pgvector",
                *checks.database_target(vectors),
                repr(embeddings.get("STORE")),
                repr(embeddings.get("DIMENSIONS")),
                repr(embeddings.get("PROVIDER")),
            ),
            partial(checks.check_pgvector, vectors),
        )
    )
    broker = "eager" if checks.eager(app) else checks.broker_target(app)[0]
    planned += [
        Check("broker", ("broker", broker), partial(checks.check_broker, app)),
        Check("worker", ("worker", broker), partial(checks.check_worker, app)),
        Check(
            "model",
            (
                "model",
                repr(sorted(memory_settings.LLM.items())),
                tuple(checks.model_users()),
            ),
            checks.check_model,
        ),
    ]
    return planned


class Runner:
    """The checks in flight, by key; each runs in a daemon thread of its own, so a check
    stuck past every timeout holds no pool and does not keep the process from exiting."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight: dict[Hashable, tuple[float, Future[CheckResult]]] = {}

    def start(self, check: Check, deadline: float) -> Future[CheckResult]:
        """The running check of ``check.key``, or a new one. A check running for longer
        than ``STALE_SECONDS`` is not shared: one stuck for good (a client retrying without
        end) fails reports for that long at most, not until the process restarts."""
        now = time.monotonic()
        with self.lock:
            running = self.in_flight.get(check.key)
            if running is not None and now - running[0] < STALE_SECONDS:
                return running[1]
            future: Future[CheckResult] = Future()
            self.in_flight[check.key] = (now, future)
        thread = threading.Thread(
            target=self.run,
            args=(check, deadline, future),
            name=f"health-{check.name}",
            daemon=True,
        )
        thread.start()
        return future

    def run(self, check: Check, deadline: float, future: Future[CheckResult]) -> None:
        try:
            future.set_result(run_check(check, deadline))
        finally:
            with self.lock:
                running = self.in_flight.get(check.key)
                if running is not None and running[1] is future:
                    del self.in_flight[check.key]


runner = Runner()


def _new_runner_after_fork() -> None:
    # A forked child (a gunicorn worker of a preloaded app) has none of the parent's threads.
    global runner
    runner = Runner()


os.register_at_fork(after_in_child=_new_runner_after_fork)


def run_check(check: Check, deadline: float) -> CheckResult:
    started = time.monotonic()
    try:
        outcome = check.run(deadline)
    except Exception as error:
        outcome = Outcome(FAIL, describe(error))
    return CheckResult(check.name, outcome.status, outcome.reason, time.monotonic() - started)


def health_check(*, timeout: float = DEFAULT_TIMEOUT, app: Any = None) -> HealthReport:
    """Whether this deployment is ready to serve, within ``timeout`` seconds; never raises.

    ``app``: the Celery app whose broker and workers are checked; by default the current
    app of the calling thread (the project's). In eager mode (``task_always_eager``) the
    broker and the worker are not needed, and reported so.
    """
    deadline = time.monotonic() + timeout
    try:
        if app is None:
            # The app itself, not the current_app proxy, which other threads resolve anew.
            app = app_or_default()
        planned = planned_checks(app)
    except Exception as error:
        return HealthReport((CheckResult("checks", FAIL, f"not planned: {describe(error)}"),))
    started = [(check, runner.start(check, deadline)) for check in planned]
    wait([future for _check, future in started], timeout=max(0.0, deadline - time.monotonic()))
    results = []
    for check, future in started:
        if future.done():
            results.append(future.result())
        else:
            results.append(
                CheckResult(check.name, FAIL, f"no answer within {timeout:g} s", timeout)
            )
    return HealthReport(tuple(results))
