"""The checks a graph write or a traversal passes before it reads or writes anything, and
the normal forms of names, types and relations. Each raises ``InvalidGraphInput`` naming
every bad field."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from cogitator_memory.exceptions import InvalidGraphInput
from cogitator_memory.graph.models import MAX_NAME, MAX_RELATION, MAX_TYPE, GraphStatus
from cogitator_memory.items.models import Trust
from cogitator_memory.items.statements import NewEvidence, entity_key
from cogitator_memory.jsondata import json_problem, text_problem
from cogitator_memory.lineage import Quote

__all__ = [
    "MAX_DEPTH",
    "MAX_FAN_OUT",
    "MAX_NODES",
    "Errors",
    "node_key",
    "normal_words",
]

# How far a traversal may go, and how much it may bring back: a walk of depth d reads up
# to fan_out ** d edges, so the bounds are what one request may cost.
MAX_DEPTH = 6
MAX_NODES = 1000
MAX_FAN_OUT = 1000
MAX_ALIASES = 100
MAX_QUOTE = 10_000


def node_key(name: str) -> str:
    """The key a node is matched by within its scope and type: the rule of entities
    (case and spacing folded)."""
    return entity_key(name)


def normal_words(text: str) -> str:
    """A type or a relation in its one form: lower case, words joined by ``_``
    (``"Works at"`` is ``works_at``)."""
    return "_".join(text.casefold().replace("-", " ").replace("_", " ").split())


def clean_name(text: str) -> str:
    return " ".join(text.split())


class Errors:
    """The problems found so far, by field; ``raise_any`` raises them together."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def add(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)

    def raise_any(self) -> None:
        if self.errors:
            raise InvalidGraphInput(self.errors)

    # --- fields -----------------------------------------------------------------------

    def text(self, name: str, value: Any, limit: int) -> str:
        """A non-empty text of at most ``limit`` characters, its spacing folded."""
        if not isinstance(value, str) or not value.strip() or len(value) > limit:
            self.add(name, f"A {name} is a non-empty text of at most {limit} characters.")
            return ""
        if problem := text_problem(value):
            self.add(name, problem)
            return ""
        return clean_name(value)

    def name(self, value: Any, field: str = "name") -> str:
        return self.text(field, value, MAX_NAME)

    def words(self, name: str, value: Any, limit: int) -> str:
        """A type or a relation: a text in its normal form (``normal_words``)."""
        text = self.text(name, value, limit)
        return normal_words(text) if text else ""

    def type(self, value: Any) -> str:
        return self.words("type", value, MAX_TYPE)

    def relation(self, value: Any, field: str = "relation") -> str:
        return self.words(field, value, MAX_RELATION)

    def aliases(self, value: Any) -> list[str]:
        if isinstance(value, str) or not isinstance(value, Iterable):
            self.add("aliases", "Aliases are a list of names.")
            return []
        names = list(value)
        if len(names) > MAX_ALIASES:
            self.add("aliases", f"At most {MAX_ALIASES} aliases.")
            return []
        cleaned: list[str] = []
        for alias in names:
            text = self.text("aliases", alias, MAX_NAME)
            if text:
                cleaned.append(text)
        return cleaned

    def properties(self, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
            self.add("properties", "Properties are a JSON object.")
            return {}
        if problem := json_problem(dict(value)):
            self.add("properties", f"Must be JSON data: {problem}")
            return {}
        return dict(value)

    def trust(self, value: Any) -> str:
        if value not in Trust.values:
            self.add(
                "trust", f"Unknown trust {value!r}; expected one of {', '.join(Trust.values)}."
            )
            return ""
        return str(value)

    def moment(self, name: str, value: Any) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime) or value.tzinfo is None:
            self.add(name, f"{name} must be a datetime with a time zone.")
            return None
        return value

    def valid_time(self, valid_from: Any, valid_to: Any) -> tuple[datetime | None, datetime | None]:
        start = self.moment("valid_from", valid_from)
        end = self.moment("valid_to", valid_to)
        if start is not None and end is not None and end <= start:
            self.add("valid_to", "valid_to must come after valid_from.")
        return start, end

    def weight(self, value: Any) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            self.add("weight", "A weight is a finite number of at least 0.")
            return 0.0
        return float(value)

    def evidence(self, value: Any) -> list[NewEvidence]:
        """Quotes as ``NewEvidence`` (``lineage.Quote`` is taken too)."""
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            self.add("evidence", "Evidence is a list of quotes.")
            return []
        quotes: list[NewEvidence] = []
        for index, quote in enumerate(value):
            if isinstance(quote, Quote):
                quote = NewEvidence(quote.quote, quote.entry_id, quote.tool_call_id)
            if not isinstance(quote, NewEvidence) or not isinstance(quote.quote, str):
                self.add("evidence", f"Evidence {index} must be a NewEvidence with a quote.")
                continue
            problem = text_problem(quote.quote) or (
                None if len(quote.quote) <= MAX_QUOTE else f"At most {MAX_QUOTE} characters."
            )
            for name, text in (("entry_id", quote.entry_id), ("tool_call_id", quote.tool_call_id)):
                if text is not None and (not isinstance(text, str) or len(text) > MAX_NAME):
                    problem = problem or f"A {name} is a text of at most {MAX_NAME} characters."
                elif isinstance(text, str):
                    problem = problem or text_problem(text)
            if quote.file_range is not None and (
                not isinstance(quote.file_range, Mapping) or json_problem(dict(quote.file_range))
            ):
                problem = problem or "A file range is a JSON object."
            if problem:
                self.add("evidence", f"Evidence {index}: {problem}")
                continue
            quotes.append(quote)
        return quotes

    def statuses(self, value: Any) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, Iterable):
            self.add("statuses", "Statuses are a list.")
            return []
        chosen = list(dict.fromkeys(value))
        unknown = [status for status in chosen if status not in GraphStatus.values]
        if unknown or not chosen:
            self.add(
                "statuses",
                f"Statuses are some of {', '.join(GraphStatus.values)}, not {unknown or 'none'}.",
            )
        return [str(status) for status in chosen]

    def relations(self, value: Any) -> list[str] | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, Iterable):
            self.add("relations", "Relations are a list.")
            return None
        chosen = [self.relation(relation, "relations") for relation in value]
        if not chosen:
            self.add("relations", "Name at least one relation, or none for every relation.")
        return list(dict.fromkeys(chosen))

    def bound(self, name: str, value: Any, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.add(name, f"{name} is a whole number from {low} to {high}.")
            return low
        return value
