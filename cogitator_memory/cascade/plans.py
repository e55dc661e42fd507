"""What a cascade plans to do to one thread (``ThreadChange``), how it redacts
(``Redaction``), and the sizes it works in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cogitator_memory.exceptions import InvalidInput

# Ids per statement (SQLite bounds the parameters of one), and per call of the dependents.
IDS_PER_QUERY = 500
IDS_PER_FORGET = 5000


@dataclass(frozen=True)
class Redaction:
    at: datetime
    reason: str | None


@dataclass
class ThreadChange:
    """What a cascade does to one thread: entries to delete (events, and every entry when
    deleting), entries to redact, summaries to delete, and every id it looked at (whose
    copies in forks it follows)."""

    thread_id: str
    delete: list[str] = field(default_factory=list)
    redact: list[str] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    considered: list[str] = field(default_factory=list)

    @property
    def gone(self) -> list[str]:
        return [*self.delete, *self.redact, *self.summaries]


def chunks(ids: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), IDS_PER_QUERY):
        yield list(ids[start : start + IDS_PER_QUERY])


def ids_of(value: Any, field_name: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInput({field_name: "A list of ids is expected."})
    ids = list(value)
    if not all(isinstance(item, str) for item in ids):
        raise InvalidInput({field_name: "Every id is a text."})
    return list(dict.fromkeys(ids))
