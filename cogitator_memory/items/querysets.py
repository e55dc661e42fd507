"""Named filters of memory items, entities and evidence."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models

from cogitator_memory.items.scopes import MemoryScope
from cogitator_memory.scope import Scope, scope_condition

if TYPE_CHECKING:
    from cogitator_memory.items.models import Entity, Evidence, MemoryItem  # noqa: F401


def memory_scope_q(scope: MemoryScope, *, prefix: str = "") -> models.Q:
    """Rows a ``MemoryScope`` sees: its agent's, of its user or of no user, of its project
    or of none, of its thread or of none (a narrower scope sees what is shared wider)."""
    condition = models.Q(**{f"{prefix}agent_id": scope.agent_id})
    for field in ("user_id", "project_id", "thread_id"):
        value = getattr(scope, field)
        shared = models.Q(**{f"{prefix}{field}__isnull": True})
        condition &= shared if value is None else shared | models.Q(**{f"{prefix}{field}": value})
    return condition


def exact_scope_q(scope: MemoryScope, *, prefix: str = "") -> models.Q:
    """Rows of exactly this scope (the slot layout works within one exact scope)."""
    condition = models.Q(**{f"{prefix}agent_id": scope.agent_id})
    for field in ("user_id", "project_id", "thread_id"):
        value = getattr(scope, field)
        condition &= models.Q(
            **({f"{prefix}{field}__isnull": True} if value is None else {f"{prefix}{field}": value})
        )
    return condition


class ItemQuerySet(models.QuerySet["MemoryItem"]):
    def visible_to(self, access: Scope) -> ItemQuerySet:
        """Items the caller of ``access`` may see (``scope.scope_condition`` on the item's
        agent and user)."""
        condition = scope_condition(access, agent_field="agent_id", user_field="user_id")
        return self.none() if condition is None else self.filter(condition)

    def seen_from(self, scope: MemoryScope) -> ItemQuerySet:
        """Items a run of ``scope`` sees: its own and those shared wider in its agent."""
        return self.filter(memory_scope_q(scope))

    def of_exact_scope(self, scope: MemoryScope) -> ItemQuerySet:
        """Items of exactly this scope."""
        return self.filter(exact_scope_q(scope))

    def of_slot(self, subject_id: str, attribute: str) -> ItemQuerySet:
        """The states of one slot: a subject's attribute."""
        return self.filter(subject_id=subject_id, attribute=attribute)

    def with_statuses(self, statuses: list[str]) -> ItemQuerySet:
        return self.filter(status__in=statuses)

    def valid_at(self, moment: datetime) -> ItemQuerySet:
        """Items that held in the world at ``moment`` (valid_to exclusive)."""
        return self.filter(valid_at_q(moment))

    def known_at(self, moment: datetime) -> ItemQuerySet:
        """Items memory held at ``moment``: recorded by then, not expired by then."""
        return self.filter(known_at_q(moment))

    def in_timeline_order(self) -> ItemQuerySet:
        """By the start of their validity; states told at one instant by when memory learned
        them, then by id, so every reader lays a slot out the same way."""
        return self.order_by("valid_from", "recorded_at", "id")


def valid_at_q(moment: datetime) -> models.Q:
    return models.Q(valid_from__lte=moment) & (
        models.Q(valid_to__isnull=True) | models.Q(valid_to__gt=moment)
    )


def valid_as_known_q(moment: datetime, known: datetime) -> models.Q:
    """Items that held at ``moment`` as memory knew them at ``known``: an end memory
    learned after ``known`` is read as the end the item had then (the one it was given,
    or none)."""
    ended_since = models.Q(valid_to_known_at__gt=known) & (
        models.Q(ends_at__isnull=True) | models.Q(ends_at__gt=moment)
    )
    return models.Q(valid_from__lte=moment) & (
        models.Q(valid_to__isnull=True) | models.Q(valid_to__gt=moment) | ended_since
    )


def known_at_q(moment: datetime) -> models.Q:
    return models.Q(recorded_at__lte=moment) & (
        models.Q(expired_at__isnull=True) | models.Q(expired_at__gt=moment)
    )


class EntityQuerySet(models.QuerySet["Entity"]):
    def visible_to(self, access: Scope) -> EntityQuerySet:
        condition = scope_condition(access, agent_field="agent_id", user_field="user_id")
        return self.none() if condition is None else self.filter(condition)

    def seen_from(self, scope: MemoryScope) -> EntityQuerySet:
        return self.filter(memory_scope_q(scope))


class EvidenceQuerySet(models.QuerySet["Evidence"]):
    def of_entries(self, entry_ids: list[str]) -> EvidenceQuerySet:
        """Evidence quoting any of these entries (what stands on them)."""
        return self.filter(entry_id__in=entry_ids)

    def holding(self) -> EvidenceQuerySet:
        return self.filter(verified=True)
