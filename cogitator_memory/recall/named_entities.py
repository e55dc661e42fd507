"""Entities of memory a text names: by their names and aliases, as whole words, case aside.

These functions hold no state and touch no database.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["EntityMatcher", "NamedEntity", "entities_named", "mentions"]


@dataclass(frozen=True)
class NamedEntity:
    """An entity of memory whose name (or an alias) a turn holds as words."""

    id: str
    name: str
    pattern: re.Pattern[str]


def _name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    words = sorted({name.strip() for name in names if name and name.strip()}, key=len)
    if not words:
        return None
    alternatives = "|".join(re.escape(word) for word in reversed(words))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def entities_named(
    text: str, entities: Iterable[tuple[str, str, Sequence[str]]]
) -> list[NamedEntity]:
    """The entities (id, name, aliases) whose name or an alias ``text`` holds as whole
    words, case aside, in the order given."""
    found = []
    for entity_id, name, aliases in entities:
        pattern = _name_pattern([name, *[alias for alias in aliases if isinstance(alias, str)]])
        if pattern is not None and pattern.search(text):
            found.append(NamedEntity(entity_id, name, pattern))
    return found


class EntityMatcher:
    """``entities_named`` for many texts against one set of entities: each entity's
    pattern compiled once, and one pattern of every name and alias that skips, in one
    search, a text naming none of them (a text that names an entity holds one of its words
    as a whole word, so the joint pattern finds a match there too)."""

    def __init__(self, entities: Iterable[tuple[str, str, Sequence[str]]]) -> None:
        self.entities: list[NamedEntity] = []
        words: list[str] = []
        for entity_id, name, aliases in entities:
            names = [name, *[alias for alias in aliases if isinstance(alias, str)]]
            pattern = _name_pattern(names)
            if pattern is not None:
                self.entities.append(NamedEntity(entity_id, name, pattern))
                words += names
        self.any = _name_pattern(words)

    def named_in(self, text: str) -> list[NamedEntity]:
        """The entities ``text`` names, in the order given (as ``entities_named``)."""
        if self.any is None or not self.any.search(text):
            return []
        return [entity for entity in self.entities if entity.pattern.search(text)]


def mentions(text: str, named: Sequence[NamedEntity]) -> int:
    """How many of the ``named`` entities ``text`` names."""
    return sum(1 for entity in named if entity.pattern.search(text))
