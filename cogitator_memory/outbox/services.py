"""Writing outbox messages with a change, and publishing them after it commits.

``write(topic, payload)`` records a message in the caller's transaction and, once that
commits, publishes it in process right away. A message that fails (the store is down)
stays and is tried again by ``drain()``, which the periodic sweeper task runs, with a
backoff that doubles per attempt up to ``MAX_BACKOFF``. Handlers are registered per topic
by the capabilities that own the stores (``register_handler``) and must be idempotent: a
message may be published twice (a publisher that dies after the store answered and
before the message was deleted).

Publishers claim messages by pushing their ``next_attempt_at`` past a lease, in a short
transaction of their own, so no transaction stays open while a store is called, and two
publishers never work on one message at once (PostgreSQL skips rows another publisher
has locked; SQLite's writers take turns).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from cogitator_memory.outbox.models import OutboxMessage

logger = logging.getLogger(__name__)

__all__ = ["DrainResult", "drain", "pending", "publish", "register_handler", "write"]

Handler = Callable[[dict[str, Any]], None]

# A claimed message is left alone this long; a publisher that died lets it come back.
LEASE = timedelta(seconds=120)
# Backoff after a failure: 2, 4, 8 ... seconds, at most an hour apart.
MAX_BACKOFF = timedelta(hours=1)
# Messages claimed per round of drain().
DRAIN_BATCH = 100

_handlers: dict[str, Handler] = {}


def register_handler(topic: str, handler: Handler) -> None:
    """The function that carries out messages of ``topic`` (registering again replaces)."""
    _handlers[topic] = handler


@dataclass(frozen=True)
class DrainResult:
    """Messages done and messages that failed (they stay, for a later attempt)."""

    done: int = 0
    failed: int = 0

    def __add__(self, other: DrainResult) -> DrainResult:
        return DrainResult(self.done + other.done, self.failed + other.failed)


def write(topic: str, payload: dict[str, Any]) -> OutboxMessage:
    """Record a message in the open transaction; it is published once that commits."""
    message = OutboxMessage.objects.create(topic=topic, payload=payload)
    message_id = message.pk
    transaction.on_commit(lambda: _publish_after_commit(message_id))
    return message


def _publish_after_commit(message_id: int) -> None:
    try:
        publish([message_id])
    except Exception:  # the change has committed; the sweeper finishes the job
        logger.exception("Could not publish outbox message %s; the sweeper retries it.", message_id)


def _claim(ids: Sequence[int] | None, limit: int) -> list[OutboxMessage]:
    """Claim due messages (of ``ids`` when given), oldest first, under a lease."""
    now = timezone.now()
    with transaction.atomic():
        due = OutboxMessage.objects.filter(next_attempt_at__lte=now)
        if ids is not None:
            due = due.filter(pk__in=list(ids))
        claimed = list(due.select_for_update(skip_locked=True).order_by("id")[:limit])
        if claimed:
            OutboxMessage.objects.filter(pk__in=[m.pk for m in claimed]).update(
                next_attempt_at=now + LEASE
            )
    return claimed


def _backoff(attempts: int) -> timedelta:
    return min(timedelta(seconds=2 ** min(attempts, 20)), MAX_BACKOFF)


def _carry_out(message: OutboxMessage) -> bool:
    handler = _handlers.get(message.topic)
    try:
        if handler is None:
            raise LookupError(f"No handler is registered for outbox topic {message.topic!r}.")
        handler(dict(message.payload))
    except Exception as exc:
        attempts = message.attempts + 1
        logger.warning(
            "Outbox message %s (%s) failed, attempt %d: %s",
            message.pk,
            message.topic,
            attempts,
            exc,
        )
        OutboxMessage.objects.filter(pk=message.pk).update(
            attempts=attempts,
            next_attempt_at=timezone.now() + _backoff(attempts),
            last_error=f"{type(exc).__name__}: {exc}"[:2000],
        )
        return False
    OutboxMessage.objects.filter(pk=message.pk).delete()
    return True


def publish(ids: Sequence[int]) -> DrainResult:
    """Carry out these messages now, where due and not claimed by another publisher."""
    claimed = _claim(ids, len(ids))
    done = sum(_carry_out(message) for message in claimed)
    return DrainResult(done, len(claimed) - done)


def drain(*, max_messages: int | None = None) -> DrainResult:
    """Carry out every due message, oldest first, a batch at a time (at most
    ``max_messages``). Returns how many were done and how many failed again."""
    result = DrainResult()
    while max_messages is None or result.done + result.failed < max_messages:
        size = DRAIN_BATCH
        if max_messages is not None:
            size = min(size, max_messages - result.done - result.failed)
        claimed = _claim(None, size)
        if not claimed:
            break
        done = sum(_carry_out(message) for message in claimed)
        result = result + DrainResult(done, len(claimed) - done)
    return result


def pending(topic: str | None = None) -> int:
    """Messages not yet carried out (of one topic)."""
    messages = OutboxMessage.objects.all()
    return (messages.filter(topic=topic) if topic else messages).count()
