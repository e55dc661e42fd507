"""The seam through which a capability asks for work in the background.

The capabilities stand below the tasks layer and never import it. Each kind of work they
send has a name here (``Work``); the tasks layer offers the Celery task that does it when
its modules are imported (``AppConfig.ready`` imports ``cogitator_memory.tasks``), and a
capability sends its work to ``task_for(work)``. A test or a project may offer another
task for a name (``offer`` again replaces it).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django.core.exceptions import ImproperlyConfigured

__all__ = ["Work", "offer", "task_for"]


class Work(StrEnum):
    """The kinds of background work a capability asks for."""

    EXTRACT_THREAD = "extract_thread"
    COMPACT_THREAD = "compact_thread"
    NOTE_RETRIEVED = "note_retrieved"
    VACUUM_TABLES = "vacuum_tables"
    FORGET_USER = "forget_user"
    EMBED_ENTRIES = "embed_entries"
    UPKEEP_SCOPE = "upkeep_scope"


_offered: dict[Work, Any] = {}


def offer(work: Work, task: Any) -> None:
    """Make ``task`` (a Celery task) the one that does ``work``."""
    _offered[work] = task


def task_for(work: Work) -> Any:
    """The Celery task that does ``work``. Raises ``ImproperlyConfigured`` when none is
    offered (the app's ``ready`` did not run: is it in ``INSTALLED_APPS``?)."""
    try:
        return _offered[work]
    except KeyError:
        raise ImproperlyConfigured(
            f"No task does {work.value!r}: add 'cogitator_memory' to INSTALLED_APPS so "
            "that its AppConfig.ready imports cogitator_memory.tasks."
        ) from None
