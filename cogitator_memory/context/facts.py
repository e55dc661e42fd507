"""Facts of a context ("Known facts:"): the memory items a run sees that hold at the
moment the turn is read, one state per slot.

- A slot (subject and attribute) shows one state: the one that started last, the narrowest
  scope on a tie (a thread's item before a user's before the agent's).
- Instructions and preferences come first, then the newest first.
- A value that replaced another shows it as ``(previously: X)`` when the run still sees
  the old state and memory did not let it go (it is superseded, not let go or stale).
- Observations (``seams.ObservationSource``) of the entities a turn names or recalls, up to
  three, go next to the facts ("Observations:").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from cogitator_memory.context.assembler import ContextBlock
from cogitator_memory.context.seams import Observation
from cogitator_memory.context.turn_context import (
    KNOWN_FACTS,
    OBSERVATIONS,
    line_tokens,
    turn_groups,
)
from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.items.models import ItemKind, ItemStatus, MemoryItem
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import same_value

__all__ = [
    "MAX_OBSERVATIONS",
    "FactsRead",
    "fact_blocks",
    "fact_text",
    "facts_among",
    "observation_blocks",
    "observations_for_turn",
    "one_state_per_slot",
    "previous_values",
    "read_facts",
    "replaced_values",
]

MAX_OBSERVATIONS = 3
FIRST_KINDS = (ItemKind.INSTRUCTION.value, ItemKind.PREFERENCE.value)


def _narrowness(item: MemoryItem) -> int:
    return sum(value is not None for value in (item.user_id, item.project_id, item.thread_id))


def _slot(item: MemoryItem) -> tuple[str, str]:
    return (item.subject.key, item.attribute)


def one_state_per_slot(items: Iterable[MemoryItem]) -> list[MemoryItem]:
    """For each slot (subject by its name, and attribute), the state that started last,
    the narrowest scope on a tie; instructions and preferences first, then newest first."""
    chosen: dict[tuple[str, str], MemoryItem] = {}
    for item in items:
        current = chosen.get(_slot(item))
        if current is None or (item.valid_from, _narrowness(item), item.recorded_at) > (
            current.valid_from,
            _narrowness(current),
            current.recorded_at,
        ):
            chosen[_slot(item)] = item
    return sorted(
        chosen.values(),
        key=lambda item: (item.kind in FIRST_KINDS, item.valid_from, item.recorded_at),
        reverse=True,
    )


def previous_values(
    items: Sequence[MemoryItem], scope: MemoryScope, *, grants: Grants | None
) -> dict[str, str]:
    """For each item (by id), the value of the state it replaced, when the run sees that
    state and memory did not let it go; items that replaced nothing are left out."""
    if not items:
        return {}
    earlier = MemoryItem.objects.seen_from(scope).filter(
        status=ItemStatus.SUPERSEDED,
        expired_at__isnull=True,
        attribute__in=sorted({item.attribute for item in items}),
        subject__key__in=sorted({item.subject.key for item in items}),
    )
    if grants is not None:
        earlier = earlier.visible_to(grants)
    return replaced_values(items, earlier.select_related("subject"))


def replaced_values(items: Sequence[MemoryItem], states: Iterable[MemoryItem]) -> dict[str, str]:
    """For each item (by id), the value of the newest superseded state of its slot among
    ``states`` that began before it, when that value differs."""
    by_slot: dict[tuple[str, str], list[MemoryItem]] = {}
    superseded = (state for state in states if state.status == ItemStatus.SUPERSEDED)
    for state in sorted(
        superseded, key=lambda state: (state.valid_from, state.recorded_at), reverse=True
    ):
        by_slot.setdefault(_slot(state), []).append(state)
    previous: dict[str, str] = {}
    for item in items:
        for state in by_slot.get(_slot(item), []):
            if state.pk != item.pk and state.valid_from < item.valid_from:
                if not same_value(state.value, item.value):
                    previous[item.pk] = state.value
                break
    return previous


@dataclass(frozen=True)
class FactsRead:
    """The facts in the order they are offered, and the values they replaced (by id)."""

    facts: list[MemoryItem]
    previous: dict[str, str]


def read_facts(
    items: MemoryItems, scope: MemoryScope, *, as_of: datetime, grants: Grants | None
) -> FactsRead:
    """The facts of a run of ``scope`` at ``as_of``. Raises what the store raises."""
    facts = one_state_per_slot(items.query(scope, as_of=as_of, grants=grants))
    return FactsRead(facts, previous_values(facts, scope, grants=grants))


def facts_among(recallable: Sequence[MemoryItem], as_of: datetime) -> FactsRead:
    """The facts at ``as_of`` and the values they replaced, from the items recall searches
    (``MemoryItems.recallable``): those are every state the facts and their previous
    values come from, so a build that recalls reads the items once."""
    holding = [item for item in recallable if item.valid_to is None or item.valid_to > as_of]
    facts = one_state_per_slot(holding)
    return FactsRead(facts, replaced_values(facts, recallable))


def fact_text(item: MemoryItem) -> str:
    """An item as a sentence: its content, or its subject, attribute and value."""
    text = " ".join((item.content or "").split())
    if text:
        return text
    return f"{item.subject.name} {item.attribute}: {item.value}"


def fact_blocks(facts: Sequence[MemoryItem], previous: dict[str, str]) -> list[ContextBlock]:
    """One line of the facts partition per fact, in the order given."""
    blocks = []
    for item in facts:
        text = fact_text(item)
        line = f"- {text}"
        if item.pk in previous:
            line += f" (previously: {' '.join(previous[item.pk].split())})"
        blocks.append(
            ContextBlock(
                "facts",
                text,
                line_tokens(line),
                source_id=item.pk,
                rendered=line,
                groups=turn_groups(KNOWN_FACTS),
                payload=item,
            )
        )
    return blocks


def _names_pattern(observation: Observation) -> re.Pattern[str] | None:
    names = [name for name in (observation.name, *observation.aliases) if name and name.strip()]
    if not names:
        return None
    alternatives = "|".join(re.escape(name.strip()) for name in names)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def observations_for_turn(
    observations: Iterable[Observation], input: str | None, recalled_item_ids: Iterable[str]
) -> list[Observation]:
    """Up to three observations of the entities ``input`` names (a name or another name,
    as words of their own) or whose items were recalled, in the order given."""
    recalled = set(recalled_item_ids)
    chosen = []
    for observation in observations:
        pattern = _names_pattern(observation)
        named = bool(input) and pattern is not None and pattern.search(input or "") is not None
        if named or recalled.intersection(observation.item_ids):
            chosen.append(observation)
            if len(chosen) == MAX_OBSERVATIONS:
                break
    return chosen


def observation_blocks(observations: Sequence[Observation]) -> list[ContextBlock]:
    blocks = []
    for observation in observations:
        text = " ".join(observation.text.split())
        if not text:
            continue
        line = f"- {observation.name}: {text}"
        blocks.append(
            ContextBlock(
                "facts",
                text,
                line_tokens(line),
                source_id=observation.entity_id,
                rendered=line,
                groups=turn_groups(OBSERVATIONS),
                payload=observation,
            )
        )
    return blocks
