"""The quotes graph nodes and edges stand on: checked against their entries, by the rule
of items, and written as ``GraphEvidence`` rows.

A quote counts only in an entry of a thread of the node's agent (and, with grants, one
the caller may see); a quote of any other entry stands on nothing and holds nowhere. A
quote of a redacted entry keeps the link, never the words (``[redacted]``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.db import connections, router

from cogitator_memory.grants import Grants, MemoryScope
from cogitator_memory.graph.models import GraphEdge, GraphEvidence, GraphNode
from cogitator_memory.items.models import Trust
from cogitator_memory.items.statements import NewEvidence
from cogitator_memory.lineage import Quote, verify_evidence
from cogitator_memory.threads.models import REDACTED_TEXT, Entry, Thread

__all__ = [
    "CheckedQuote",
    "active_on_its_own",
    "check_quotes",
    "lock_quoted_threads",
    "write_evidence",
]


@dataclass(frozen=True)
class CheckedQuote:
    """A quote, the entry it stands on (None: none it may name), and whether it holds."""

    quote: NewEvidence
    entry_id: str | None
    holds: bool


def lock_quoted_threads(evidence: Sequence[NewEvidence]) -> None:
    """Lock the threads of the entries the quotes name, before the agent's graph lock (the
    order a deletion of entries takes them: thread, then agent). A deletion either ends
    before the quotes are checked (the entry is gone: the quote stands on nothing) or
    waits for this write and then finds its evidence. SQLite's IMMEDIATE transaction
    serializes the two already."""
    ids = sorted({quote.entry_id for quote in evidence if quote.entry_id})
    connection = connections[router.db_for_write(Thread)]
    if ids and connection.features.has_select_for_update:
        locked = Thread.objects.select_for_update(of=("self",)).filter(entries__pk__in=ids)
        list(locked.order_by("pk").values_list("pk", flat=True))


def check_quotes(
    scope: MemoryScope, evidence: Sequence[NewEvidence], grants: Grants | None
) -> list[CheckedQuote]:
    """Each quote checked against the entry it names (one query)."""
    ids = [quote.entry_id for quote in evidence if quote.entry_id]
    found: dict[str, Entry] = {}
    if ids:
        entries = Entry.objects.filter(pk__in=ids, thread__agent_id=scope.agent_id)
        if grants is not None:
            entries = entries.visible_to(grants)
        found = {entry.pk: entry for entry in entries}
    checked: list[CheckedQuote] = []
    for quote in evidence:
        entry = found.get(quote.entry_id) if quote.entry_id else None
        if entry is not None and entry.is_redacted:
            checked.append(CheckedQuote(replace(quote, quote=REDACTED_TEXT), entry.pk, False))
            continue
        verdict = verify_evidence(Quote(quote.quote, quote.entry_id), entry)
        checked.append(CheckedQuote(quote, entry.pk if entry else None, verdict == "verified"))
    return checked


def active_on_its_own(trust: str, checked: Sequence[CheckedQuote]) -> bool:
    """Whether what was said is active without a reviewer: the system's word, or the
    user's with quotes that all hold. A model, a tool or a page is never active on its
    own (the rule of items)."""
    return trust == Trust.SYSTEM or (
        trust == Trust.USER and bool(checked) and all(quote.holds for quote in checked)
    )


def write_evidence(
    checked: Sequence[CheckedQuote],
    *,
    node: GraphNode | None = None,
    edge: GraphEdge | None = None,
    new: bool = False,
) -> int:
    """Add the quotes to a node's or an edge's evidence, each once: a quote it holds
    already (the same words of the same entry and tool call) is not written again, and
    is marked verified when it holds now. ``new``: the node or edge was made in this
    transaction and holds none yet (nothing to read). Returns the rows written."""
    existing: dict[tuple[str | None, str, str | None], GraphEvidence] = {}
    if not new and checked:
        owned = (
            GraphEvidence.objects.filter(node=node)
            if node
            else GraphEvidence.objects.filter(edge=edge)
        )
        existing = {(row.entry_id, row.quote, row.tool_call_id): row for row in owned}
    rows: list[GraphEvidence] = []
    for quote in checked:
        key = (quote.entry_id, quote.quote.quote, quote.quote.tool_call_id)
        if key in existing:
            row = existing[key]
            if quote.holds and not row.verified:
                row.verified = True
                row.save(update_fields=["verified"])
            continue
        row = GraphEvidence(
            node=node,
            edge=edge,
            entry_id=quote.entry_id,
            tool_call_id=quote.quote.tool_call_id,
            file_range=dict(quote.quote.file_range) if quote.quote.file_range else None,
            quote=quote.quote.quote,
            verified=quote.holds,
        )
        existing[key] = row
        rows.append(row)
    if rows:
        GraphEvidence.objects.bulk_create(rows)
    return len(rows)
