"""What stands on entries and threads, and keeping it in step with them.

Derived data (vectors of messages now; items, summaries and file versions as they come)
never outlives its source, and copies of a thread's owner never lag behind it. The
thread services call these functions as an explicit step of every change, inside the
transaction that makes it:

- ``forget_entries(entry_ids)`` when entries are deleted or redacted, or their thread is
  cleared or deleted;
- ``owner_changed(thread_id, agent_id, user_id)`` when a thread's user changes.

Each capability that keeps derived data registers a ``Dependent`` once, at start-up
(``AppConfig.ready``). A dependent whose data lives in the same database removes or
updates it in the open transaction, so a rollback keeps both; one whose data lives
elsewhere (Qdrant) writes an outbox row in that transaction (``cogitator_memory.outbox``),
published after commit and retried by the sweeper until done. A dependent that raises
rolls the whole change back: nothing is forgotten by half.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

__all__ = [
    "Dependent",
    "EvidenceCheck",
    "Quote",
    "dependents",
    "evidence_on_path",
    "forget_entries",
    "owner_changed",
    "quote_holds",
    "register",
    "verify_evidence",
    "verify_evidence_in_memory",
]


class Dependent(Protocol):
    """Derived data kept of entries and threads."""

    name: str

    def forget_entries(self, entry_ids: Sequence[str]) -> None:
        """Remove what stands on these entries (they are going, or their text is)."""

    def owner_changed(self, thread_id: str, agent_id: str, user_id: str | None) -> None:
        """Update the copies of the thread's owner kept with its derived data."""


_dependents: dict[str, Dependent] = {}


def register(dependent: Dependent) -> None:
    """Register a dependent (again under the same name replaces it)."""
    _dependents[dependent.name] = dependent


def dependents() -> list[Dependent]:
    return list(_dependents.values())


def forget_entries(entry_ids: Sequence[str]) -> None:
    """Take what stands on these entries out of every store; call inside the transaction
    that deletes or redacts them."""
    ids = list(dict.fromkeys(entry_ids))
    if not ids:
        return
    for dependent in dependents():
        dependent.forget_entries(ids)


def owner_changed(thread_id: str, agent_id: str, user_id: str | None) -> None:
    """Bring the copies of a thread's owner up to date; call inside the transaction that
    changes the thread's ``user_id``."""
    for dependent in dependents():
        dependent.owner_changed(thread_id, agent_id, user_id)


# --- quotes: what derived memory stands on, word for word ---------------------------------

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
    from cogitator_memory.threads.text import entry_text

    if entry is None or quote.entry_id is None or entry.pk != quote.entry_id:
        return SUGGESTED
    return VERIFIED if quote_holds(quote.quote, entry_text(entry)) else SUGGESTED


def verify_evidence_in_memory(evidence: Iterable[Quote]) -> EvidenceCheck:
    """Every quote checked against its entry as stored now (one query)."""
    from cogitator_memory.threads.models import Entry

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
