"""Dry runs of the cascades: what one would remove, counted, with nothing left behind.

``dry_run(work)`` runs ``work`` (calls of ``MemoryCascade``) inside a transaction and
rolls it back, so the counts are those of the real cascade, by the same code, and the
confirmation pages of the admin show exactly what the cascade would take:

- every row it wrote, deleted or changed comes back with the rollback, outbox rows
  included (nothing is published: an outbox row is carried out after commit);
- what a cascade does after commit (signals to receivers, compaction asked again, task
  results forgotten, cached keyword corpora dropped, ``VACUUM``) is registered with
  ``transaction.on_commit``, and Django discards those callbacks with the rollback: no
  signal is sent and no task enqueued;
- the one call a cascade makes outside the database, deleting a forgotten user's vectors
  from a store that is not transactional (Qdrant), is not made while ``previewing()``:
  those vectors are not counted beforehand.

A dry run holds the locks the cascade takes until it rolls back (a thread's row; on
SQLite the database's write lock), for as long as the cascade takes: for a user with
much memory, as long as forgetting them would.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TypeVar

from django.db import transaction

__all__ = ["dry_run", "previewing"]

T = TypeVar("T")

_previewing: ContextVar[bool] = ContextVar("cogitator_memory_cascade_previewing", default=False)


class _RolledBack(Exception):
    """Raised at the end of a dry run to roll its transaction back."""


def previewing() -> bool:
    """Whether the code runs inside a dry run (``dry_run``)."""
    return _previewing.get()


def dry_run(work: Callable[[], T]) -> T:
    """What ``work`` returns, with everything it did to the database rolled back and
    everything it left for after commit discarded. ``work``'s own errors propagate (and
    roll back the same way)."""
    token = _previewing.set(True)
    done: list[T] = []
    try:
        with transaction.atomic():
            done.append(work())
            raise _RolledBack
    except _RolledBack:
        pass
    finally:
        _previewing.reset(token)
    return done[0]
