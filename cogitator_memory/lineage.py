"""Lineage: what derived memory stands on, word for word.

A memory item, a compaction atom or a summary says which entries it stands on with quotes;
these functions check a quote against the entry it names. Keeping derived data in step
with its entries (forgetting what stands on an entry that goes) is the registry of
dependents, ``cogitator_memory.dependents``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Literal

from cogitator_memory.threads.models import Entry
from cogitator_memory.threads.text import entry_text

__all__ = [
    "EvidenceCheck",
    "Quote",
    "evidence_on_path",
    "quote_holds",
    "verify_evidence",
    "verify_evidence_in_memory",
]


VERIFIED: Literal["verified"] = "verified"
SUGGESTED: Literal["suggested"] = "suggested"
Verdict = Literal["verified", "suggested"]


@dataclass(frozen=True)
class Quote:
    """What a derived thing says it stands on: the words, and the entry they are in."""

    quote: str
    entry_id: str | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class EvidenceCheck:
    """Each quote with its verdict; ``status`` is verified when every quote holds."""

    status: Verdict
    evidence: list[tuple[Quote, Verdict]]


def _folded(text: str) -> str:
    return " ".join(text.split())


def quote_holds(quote: str, text: str) -> bool:
    """Whether ``quote`` is in ``text``, whitespace aside (runs of spaces, tabs and new
    lines count as one space); case and signs count. An empty quote holds nowhere."""
    needle = _folded(quote)
    return bool(needle) and needle in _folded(text)


def verify_evidence(quote: Quote, entry: Entry | None) -> Verdict:
    """'verified' when the quote is in the entry's text, whitespace aside; 'suggested' for
    a quote not found, an entry that is gone, or evidence without an entry."""
    if entry is None or quote.entry_id is None or entry.pk != quote.entry_id:
        return SUGGESTED
    return VERIFIED if quote_holds(quote.quote, entry_text(entry)) else SUGGESTED


def verify_evidence_in_memory(evidence: Iterable[Quote]) -> EvidenceCheck:
    """Every quote checked against its entry as stored now (one query)."""
    quotes = list(evidence)
    ids = {quote.entry_id for quote in quotes if quote.entry_id}
    entries = Entry.objects.in_bulk(list(ids)) if ids else {}
    checked = [
        (quote, verify_evidence(quote, entries.get(quote.entry_id) if quote.entry_id else None))
        for quote in quotes
    ]
    holds = bool(checked) and all(verdict == VERIFIED for _quote, verdict in checked)
    return EvidenceCheck(VERIFIED if holds else SUGGESTED, checked)


def evidence_on_path(evidence: Iterable[Quote], path_entry_ids: Collection[str]) -> bool:
    """Whether every quote is in an entry of this branch (the ids of ``get_path``)."""
    quotes = list(evidence)
    return bool(quotes) and all(
        quote.entry_id is not None and quote.entry_id in path_entry_ids for quote in quotes
    )
