"""What the upkeep tests share: items written in a scope."""

from __future__ import annotations

from datetime import UTC, datetime

from cogitator_memory.grants import MemoryScope
from cogitator_memory.items.models import ItemKind, MemoryItem, Trust
from cogitator_memory.items.services import MemoryItems
from cogitator_memory.items.statements import NewItem

AGENT = "concierge"
AS_OF = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def write_fact(
    scope: MemoryScope,
    subject: str,
    attribute: str,
    value: str,
    *,
    kind: str = ItemKind.FACT,
    trust: str = Trust.SYSTEM,
    items: MemoryItems | None = None,
    content: str = "",
) -> MemoryItem:
    """A statement written in ``scope`` (a system's: active at once)."""
    return (
        (items or MemoryItems())
        .write(
            scope,
            NewItem(
                kind=kind,
                subject=subject,
                attribute=attribute,
                value=value,
                content=content or f"{subject} {attribute} {value}",
                trust=trust,
                valid_from=AS_OF,
            ),
        )
        .item
    )
