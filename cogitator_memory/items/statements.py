"""What a statement to remember is made of, and the checks it passes before any write:
``NewItem`` (with its ``NewEvidence``), the ``Slot`` it is a value of, what a write
returns (``Written``), and how values and subjects are compared."""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cogitator_memory.exceptions import InvalidItem
from cogitator_memory.items.models import (
    ItemKind,
    MemoryItem,
    Trust,
)
from cogitator_memory.jsondata import json_problem, text_problem

DEFAULT_ACTIVATION_CONFIDENCE = 0.7
MAX_TEXT = 10_000
MAX_NAME = 255


def same_value(first: str, second: str) -> bool:
    """Whether two values of a slot are the same: spacing aside; case and signs count."""
    return " ".join(first.split()) == " ".join(second.split())


def entity_key(name: str) -> str:
    """The key an entity is matched by: its name with case and spacing folded."""
    return re.sub(r"\s+", " ", name).strip().casefold()[:MAX_NAME]


@dataclass(frozen=True)
class Slot:
    """A subject's attribute: what the states of one timeline are values of."""

    subject_id: str
    attribute: str


@dataclass(frozen=True)
class NewEvidence:
    """A quote a new item stands on, and the entry it is said to be in."""

    quote: str
    entry_id: str | None = None
    tool_call_id: str | None = None
    file_range: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class NewItem:
    """A statement to write: what about whom, said by whom, holding from when."""

    kind: str
    subject: str
    attribute: str
    value: str
    trust: str
    content: str = ""
    subject_kind: str = ""
    confidence: float = 0.5
    valid_from: datetime | None = None
    ends_at: datetime | None = None
    evidence: Sequence[NewEvidence] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Written:
    """The state a statement became or merged into (``merged``)."""

    item: MemoryItem
    merged: bool


def check_new_item(new: NewItem) -> None:
    errors: dict[str, list[str]] = {}

    def add(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    if new.kind not in ItemKind.values:
        add("kind", f"Unknown kind {new.kind!r}; expected one of {', '.join(ItemKind.values)}.")
    if new.trust not in Trust.values:
        add("trust", f"Unknown trust {new.trust!r}; expected one of {', '.join(Trust.values)}.")
    for name, value, limit in (
        ("subject", new.subject, MAX_NAME),
        ("attribute", new.attribute, MAX_NAME),
        ("value", new.value, MAX_TEXT),
    ):
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            add(name, f"A {name} is a non-empty text of at most {limit} characters.")
        elif problem := text_problem(value):
            add(name, problem)
    if not isinstance(new.content, str) or len(new.content) > MAX_TEXT:
        add("content", f"Content is a text of at most {MAX_TEXT} characters.")
    elif problem := text_problem(new.content):
        add("content", problem)
    if (
        isinstance(new.confidence, bool)
        or not isinstance(new.confidence, int | float)
        or not 0 <= new.confidence <= 1
    ):
        add("confidence", "A confidence is a number from 0 to 1.")
    for name, moment in (("valid_from", new.valid_from), ("ends_at", new.ends_at)):
        if moment is not None and (not isinstance(moment, datetime) or moment.tzinfo is None):
            add(name, f"{name} must be a datetime with a time zone.")
    if (
        isinstance(new.valid_from, datetime)
        and isinstance(new.ends_at, datetime)
        and new.valid_from.tzinfo is not None
        and new.ends_at.tzinfo is not None
        and new.ends_at <= new.valid_from
    ):
        add("ends_at", "ends_at must come after valid_from.")
    for index, evidence in enumerate(new.evidence):
        if not isinstance(evidence, NewEvidence) or not isinstance(evidence.quote, str):
            add("evidence", f"Evidence {index} must be a NewEvidence with a quote.")
        elif problem := text_problem(evidence.quote) or (
            text_problem(evidence.entry_id) if isinstance(evidence.entry_id, str) else None
        ):
            add("evidence", f"Evidence {index}: {problem}")
    if problem := json_problem(dict(new.metadata)):
        add("metadata", f"Must be JSON data: {problem}")
    if errors:
        raise InvalidItem(errors)
