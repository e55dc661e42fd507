"""Facts kept as memory items: core facts (key/value, with history) and free facts.

``CoreFactsStore`` keeps a small set of key/value facts about the user, formatted for a
system prompt: each key is the slot ``core:<key>`` of system items of its scope
(``MemoryScope("core")`` by default). A new value supersedes the current one, the same
value again changes nothing, and ``delete`` lets the current value go and keeps the
history.

``FactAdapter`` stores and retrieves an agent's free-standing facts (a text, a category,
a confidence, a source and its quotes): each fact is the slot ``fact:<id>`` of its own, so
changing a fact makes a new state of it and keeps the old one as history.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from cogitator_memory.exceptions import InvalidItem, ItemNotFound
from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import Entity, ItemKind, MemoryItem, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewEvidence, NewItem, Slot, entity_key
from cogitator_memory.jsondata import text_problem

__all__ = ["CORE_SCOPE", "CoreFactsStore", "Fact", "FactAdapter", "FactChange"]

CORE_SCOPE = MemoryScope("core")
CORE_SUBJECT = "core"
CORE_PREFIX = "core:"
FACTS_SUBJECT = "facts"
FACT_PREFIX = "fact:"
MAX_KEY = 200


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY or text_problem(key):
        raise InvalidItem({"key": f"A key is a non-empty text of at most {MAX_KEY} characters."})
    return key


@dataclass(frozen=True)
class FactChange:
    """One value a core fact had, and when it was set."""

    value: str
    set_at: datetime


class CoreFactsStore:
    """Key/value facts about the user, as system memory items of ``scope``."""

    def __init__(self, scope: MemoryScope = CORE_SCOPE, *, items: MemoryItems | None = None):
        self.scope = scope
        self.items = items or MemoryItems()

    def _subject(self) -> Entity | None:
        return self.items.entity_named(self.scope, CORE_SUBJECT)

    def _current(self, key: str) -> MemoryItem | None:
        subject = self._subject()
        if subject is None:
            return None
        slot = Slot(subject.pk, CORE_PREFIX + key)
        holding = self.items.query(self.scope, slot=slot)
        return holding[0] if holding else None

    def set(self, key: str, value: str) -> MemoryItem:
        """Set ``key`` to ``value``: a new value supersedes the current one; the same value
        again changes nothing."""
        _check_key(key)
        written = self.items.write(
            self.scope,
            NewItem(
                kind=ItemKind.FACT,
                subject=CORE_SUBJECT,
                attribute=CORE_PREFIX + key,
                value=value,
                content=f"{key}: {value}",
                trust=Trust.SYSTEM,
                confidence=1.0,
            ),
        )
        return written.item

    def get(self, key: str) -> str | None:
        current = self._current(_check_key(key))
        return current.value if current is not None else None

    def get_all(self) -> dict[str, str]:
        subject = self._subject()
        if subject is None:
            return {}
        found = {}
        for item in sorted(self.items.query(self.scope), key=lambda item: item.attribute):
            if item.subject_id == subject.pk and item.attribute.startswith(CORE_PREFIX):
                found[item.attribute.removeprefix(CORE_PREFIX)] = item.value
        return found

    def get_history(self, key: str) -> list[FactChange]:
        """Every value ``key`` had, oldest first."""
        subject = self._subject()
        if subject is None:
            return []
        states = self.items.history(self.scope, Slot(subject.pk, CORE_PREFIX + _check_key(key)))
        return [FactChange(state.value, state.valid_from) for state in states]

    @transaction.atomic
    def delete(self, key: str) -> bool:
        """Let the current value go, keeping the history. False when the key has none."""
        current = self._current(_check_key(key))
        return bool(current and self.items.let_go([current.pk]))

    def format_for_prompt(self) -> str:
        """The facts as lines for a system prompt; empty when there are none."""
        facts = self.get_all()
        if not facts:
            return ""
        lines = [f"- {key}: {value}" for key, value in facts.items()]
        return "Known facts about the user:\n" + "\n".join(lines)


@dataclass(frozen=True)
class Fact:
    """A free-standing fact: its id is its slot's, its item the state that holds."""

    id: str
    content: str
    category: str
    confidence: float
    source: str
    status: str
    item_id: str
    created_at: datetime
    metadata: dict[str, Any]


class FactAdapter:
    """An agent's facts, each a slot of memory items of its own.

    ``source`` is the trust of who stated the fact: only a system fact (or a user's with
    quotes that hold) is active at once; others wait for review like every item.
    """

    def __init__(self, *, items: MemoryItems | None = None) -> None:
        self.items = items or MemoryItems()

    @staticmethod
    def _fact(item: MemoryItem) -> Fact:
        metadata = dict(item.metadata or {})
        return Fact(
            id=item.attribute.removeprefix(FACT_PREFIX),
            content=item.value,
            category=str(metadata.pop("category", "")),
            confidence=item.confidence,
            source=item.trust,
            status=item.status,
            item_id=item.pk,
            created_at=item.valid_from,
            metadata=metadata,
        )

    def add(
        self,
        scope: MemoryScope,
        content: str,
        *,
        category: str = "",
        confidence: float = 1.0,
        source: str = Trust.SYSTEM,
        evidence: Sequence[NewEvidence] = (),
        metadata: dict[str, Any] | None = None,
        fact_id: str | None = None,
    ) -> Fact:
        fact_id = fact_id or uuid.uuid4().hex
        written = self.items.write(
            scope,
            NewItem(
                kind=ItemKind.FACT,
                subject=FACTS_SUBJECT,
                attribute=FACT_PREFIX + _check_key(fact_id),
                value=content,
                content=content,
                trust=source,
                confidence=confidence,
                evidence=evidence,
                metadata={**(metadata or {}), "category": category},
            ),
        )
        return self._fact(written.item)

    def _holding(self, scope: MemoryScope) -> list[MemoryItem]:
        return [
            item
            for item in self.items.query(scope)
            if item.subject.key == entity_key(FACTS_SUBJECT)
            and item.attribute.startswith(FACT_PREFIX)
        ]

    def get(self, scope: MemoryScope, *, category: str | None = None) -> list[Fact]:
        """The facts that hold now, newest first, of one category if given."""
        facts = [self._fact(item) for item in self._holding(scope)]
        return [fact for fact in facts if category is None or fact.category == category]

    def update(self, scope: MemoryScope, fact_id: str, content: str, **fields: Any) -> Fact:
        """A new state of the fact; the old one stays as its history."""
        current = next((f for f in self.get(scope) if f.id == fact_id), None)
        if current is None:
            raise ItemNotFound(fact_id)
        return self.add(
            scope,
            content,
            category=fields.pop("category", current.category),
            confidence=fields.pop("confidence", current.confidence),
            source=fields.pop("source", current.source),
            metadata=fields.pop("metadata", current.metadata),
            fact_id=fact_id,
            **fields,
        )

    def remove(self, scope: MemoryScope, fact_id: str) -> bool:
        """Let the fact go; its history stays."""
        current = next((f for f in self.get(scope) if f.id == fact_id), None)
        return bool(current and self.items.let_go([current.item_id]))

    def search(self, scope: MemoryScope, query: str, *, limit: int = 10) -> list[Fact]:
        """Facts that hold now whose text holds every word of ``query`` (case aside)."""
        words = [word.casefold() for word in query.split()]
        found = [
            fact
            for fact in self.get(scope)
            if all(word in fact.content.casefold() for word in words)
        ]
        return found[:limit]
