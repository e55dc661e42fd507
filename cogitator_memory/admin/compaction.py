"""A thread's compaction entries as the admin shows them: each the handoff a reader gets,
with its levels (saga, arcs, chapters) to expand and every atom's evidence linked to its
entry. Only plain data goes to the template, which escapes every text."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.utils import quote
from django.urls import NoReverseMatch, reverse

from cogitator_memory.compaction.history import compaction_event
from cogitator_memory.threads.models import Entry, EntryType, Thread

__all__ = ["COMPACTIONS_SHOWN", "compaction_handoffs"]

# The newest compactions a thread's page shows.
COMPACTIONS_SHOWN = 10


def _entry_url(entry_id: Any) -> str | None:
    if not isinstance(entry_id, str) or not entry_id:
        return None
    try:
        return reverse("admin:cogitator_memory_entry_change", args=[quote(entry_id)])
    except NoReverseMatch:
        return None


def _atom(atom: Any) -> dict[str, Any] | None:
    if not isinstance(atom, dict):
        return None
    evidence = []
    for quote_ in atom.get("evidence") or ():
        if not isinstance(quote_, dict):
            continue
        entry_id = quote_.get("entry")
        evidence.append(
            {
                "entry_id": entry_id,
                "entry_url": _entry_url(entry_id),
                "quote": str(quote_.get("quote") or ""),
                "verified": bool(quote_.get("verified")),
            }
        )
    return {
        "kind": str(atom.get("kind") or ""),
        "status": str(atom.get("status") or ""),
        "text": str(atom.get("text") or ""),
        "verified": bool(atom.get("verified")),
        "evidence": evidence,
    }


def _node(node: Any) -> dict[str, Any] | None:
    if not isinstance(node, dict):
        return None
    atoms = [shown for shown in map(_atom, node.get("atoms") or ()) if shown is not None]
    return {
        "from_id": node.get("from"),
        "from_url": _entry_url(node.get("from")),
        "to_id": node.get("to"),
        "to_url": _entry_url(node.get("to")),
        "atoms": atoms,
    }


def _nodes(nodes: Any) -> list[dict[str, Any]]:
    if not isinstance(nodes, list):
        return []
    return [shown for shown in map(_node, nodes) if shown is not None]


def compaction_handoffs(thread: Thread, *, limit: int = COMPACTIONS_SHOWN) -> list[dict[str, Any]]:
    """The thread's newest ``limit`` compaction entries, newest first, as plain data."""
    entries = Entry.objects.filter(thread=thread, type=EntryType.COMPACTION).order_by("-seq")[
        :limit
    ]
    shown = []
    for entry in entries:
        event = compaction_event(entry)
        levels = event.get("levels") if isinstance(event.get("levels"), dict) else None
        shown.append(
            {
                "id": entry.pk,
                "seq": entry.seq,
                "url": _entry_url(entry.pk),
                "created_at": entry.created_at,
                "strategy": str(event.get("strategy") or ""),
                "summary": str(event.get("summary") or ""),
                "first_kept_id": event.get("first_kept_entry_id"),
                "first_kept_url": _entry_url(event.get("first_kept_entry_id")),
                "covered_to_id": event.get("covered_to_entry_id"),
                "covered_to_url": _entry_url(event.get("covered_to_entry_id")),
                "levels": None
                if levels is None
                else {
                    "saga": _node(levels.get("saga")),
                    "arcs": _nodes(levels.get("arcs")),
                    "chapters": _nodes(levels.get("chapters")),
                },
            }
        )
    return shown
