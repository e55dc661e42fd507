"""The scope of memory items: whose memory an item is part of."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.jsondata import storable_text

SCOPE_FIELDS = ("agent_id", "user_id", "project_id", "thread_id")
MAX_SCOPE_ID_LENGTH = 255


@dataclass(frozen=True)
class MemoryScope:
    """An agent, and optionally a user, a project and a thread.

    An item written in a scope belongs to exactly that scope; a run of a scope sees the
    items of its scope and those shared wider in its agent (an item of no user is seen by
    every user of the agent, an item of no thread in every thread).
    """

    agent_id: str
    user_id: str | None = None
    project_id: str | None = None
    thread_id: str | None = None

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        for field in SCOPE_FIELDS:
            value = getattr(self, field)
            if value is None and field != "agent_id":
                continue
            if not storable_text(value) or not value.strip() or len(value) > MAX_SCOPE_ID_LENGTH:
                errors[f"scope.{field}"] = (
                    f"A {field.replace('_', ' ')} is a non-empty text of at most "
                    f"{MAX_SCOPE_ID_LENGTH} characters."
                )
        if errors:
            raise InvalidInput(errors)

    def as_fields(self) -> dict[str, Any]:
        return {field: getattr(self, field) for field in SCOPE_FIELDS}

    @classmethod
    def of(cls, row: Any) -> MemoryScope:
        """The exact scope of an item or entity row."""
        return cls(**{field: getattr(row, field) for field in SCOPE_FIELDS})
