"""The record of a forgetting: what kind and how many, never what went.

A cascade made by a person is written to Django's admin log (``LogEntry``), on the object
that stays to tell of it: the thread whose entries went or that was rewound, the thread
deleted (by its id, after the deletion), the forget run of a user. Its ``object_repr`` is
that object's id and its ``change_message`` the kind of forgetting, where it came from
and the report's counts; never a text of an entry, an item or a file. Every cascade, by a
person or a program, also writes one line to the ``cogitator_memory.cascade`` logger with
the same, without ids.

The cascade deletes the admin log rows about what went (their ``object_repr`` may be an
item's value, see ``cascade.traces``); the rows written here come after it, name only ids,
and stay. A forget run's row keeps the user id forgotten: the record that the forgetting
asked for was made, which is what the controller has to be able to show. Nothing else of
the user is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.apps import apps
from django.db import models

from cogitator_memory.cascade.report import counted_lines

__all__ = ["ADDITION", "CHANGE", "DELETION", "counts_text", "log_cascade", "logger"]

logger = logging.getLogger("cogitator_memory.cascade")

# Django's action flags (django.contrib.admin.models), here so that the app does not
# need the admin installed to run a cascade.
ADDITION, CHANGE, DELETION = 1, 2, 3
# LogEntry.object_repr's length.
REPR_LENGTH = 200


def counts_text(counts: Mapping[str, Any]) -> str:
    """The counts in words: ``"entries deleted: 3, memory items purged: 1"``
    (``"nothing"`` when all are 0)."""
    lines = counted_lines(counts)
    return ", ".join(f"{label}: {number}" for label, number in lines) if lines else "nothing"


def log_cascade(
    user: Any,
    model: type[models.Model],
    object_id: str,
    *,
    action_flag: int,
    message: str,
) -> None:
    """One admin log row by ``user`` about ``model``'s ``object_id`` (its repr the id)
    saying ``message``; nothing for no person (an API key) or without the admin."""
    if not apps.is_installed("django.contrib.admin") or getattr(user, "pk", None) is None:
        return
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType

    LogEntry.objects.create(
        user_id=user.pk,
        content_type=ContentType.objects.get_for_model(model, for_concrete_model=False),
        object_id=str(object_id),
        object_repr=str(object_id)[:REPR_LENGTH],
        action_flag=action_flag,
        change_message=message,
    )
