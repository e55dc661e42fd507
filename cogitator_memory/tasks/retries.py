"""The one retry policy of the app's tasks.

Every task is safe to run again (each says why), so each is acknowledged after it ran (a
worker lost mid-task leaves it to another worker) and retried with backoff when what it
needs fails for a while: a model or an embedding provider (which already retry a 429 or
5xx a few times within one request), or a database that is briefly locked (SQLite) or
restarting. Retries wait 1 s, 2 s, 4 s ... up to 10 minutes apart, with jitter, about an
hour in all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.db import OperationalError

__all__ = ["TASK_MAX_RETRIES", "TASK_RETRY_BACKOFF_MAX", "retried_task", "retry_errors"]

TASK_MAX_RETRIES = 8
TASK_RETRY_BACKOFF_MAX = 600


def retry_errors(*retry_on: type[Exception]) -> tuple[type[Exception], ...]:
    """What a task of the policy is retried on: ``retry_on`` and the database's
    ``OperationalError``."""
    return (*retry_on, OperationalError)


def retried_task(*retry_on: type[Exception], **options: Any) -> Callable[[Any], Any]:
    """``shared_task`` with the app's retry policy: retried on ``retry_on`` and on the
    database's ``OperationalError``; ``options`` are passed on (``bind``,
    ``ignore_result``) or override the policy where a task says why."""
    policy: dict[str, Any] = {
        "autoretry_for": retry_errors(*retry_on),
        "retry_backoff": True,
        "retry_backoff_max": TASK_RETRY_BACKOFF_MAX,
        "retry_jitter": True,
        "max_retries": TASK_MAX_RETRIES,
        "acks_late": True,
    }
    return shared_task(**{**policy, **options})
