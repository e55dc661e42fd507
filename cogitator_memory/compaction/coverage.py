"""Which compaction summaries stand on given entries.

A compaction entry (``history.py``) summarizes the entries of its branch before its first
kept entry, and its atoms (``atoms.py``, in the levels of a hierarchical compaction) quote
entries by id. When entries are deleted or redacted, the summaries that cover them or quote
them go too, and the next compaction writes them again (``cascade``). The rule:

- a summary covers the entries of its branch before ``first_kept_entry_id``; when that
  entry is gone, those at or before ``covered_to_entry_id`` (the last entry it left out);
  when both are gone, every entry of its branch before it;
- a summary quotes an entry when an atom's evidence (``{"entry": <id>, ...}``) names it.

Since a summary folds in the one before it, a newer summary on the same branch covers
what an older one did, and goes with it. Whether an entry is on a summary's branch is
answered by ``threads.paths.on_branch``: a walk down the stretch of the branch after the
thread's first fork only.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from cogitator_memory.compaction.history import COMPACTION, compaction_event
from cogitator_memory.threads.models import Entry
from cogitator_memory.threads.paths import on_branch

__all__ = ["quoted_entry_ids", "summaries_standing_on"]

# Ids per query of a thread's entries (SQLite bounds the parameters of one statement).
IDS_PER_QUERY = 500


def quoted_entry_ids(event: dict[str, Any]) -> set[str]:
    """The ids of the entries the atoms of a compaction event quote (every level)."""
    levels = event.get("levels")
    if not isinstance(levels, dict):
        return set()
    nodes: list[Any] = []
    if isinstance(levels.get("saga"), dict):
        nodes.append(levels["saga"])
    for name in ("arcs", "chapters"):
        if isinstance(levels.get(name), list):
            nodes.extend(levels[name])
    quoted: set[str] = set()
    for node in nodes:
        for atom in _atoms(node):
            for quote in atom.get("evidence") or ():
                if isinstance(quote, dict) and isinstance(quote.get("entry"), str):
                    quoted.add(quote["entry"])
    return quoted


def _atoms(node: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(node, dict):
        return
    for atom in node.get("atoms") or ():
        if isinstance(atom, dict):
            yield atom


def summaries_standing_on(thread_id: str, entry_ids: Collection[str]) -> list[str]:
    """The ids of the thread's compaction entries that cover or quote any of
    ``entry_ids`` (entries of this thread that still stand: call it before they go), in
    thread order. Compaction entries among ``entry_ids`` are not listed."""
    wanted = list(dict.fromkeys(entry_ids))
    if not wanted:
        return []
    compactions = list(
        Entry.objects.filter(type=COMPACTION, thread_id=thread_id)
        .order_by("seq")
        .values_list("pk", "event")
    )
    if not compactions:
        return []
    seqs: dict[str, int] = {}
    for start in range(0, len(wanted), IDS_PER_QUERY):
        chunk = wanted[start : start + IDS_PER_QUERY]
        seqs.update(
            Entry.objects.filter(thread_id=thread_id, pk__in=chunk).values_list("pk", "seq")
        )
    if not seqs:
        return []
    anchors = {
        str(value)
        for _pk, event in compactions
        if isinstance(event, dict)
        for value in (event.get("first_kept_entry_id"), event.get("covered_to_entry_id"))
        if value is not None
    }
    standing = set(
        Entry.objects.filter(thread_id=thread_id, pk__in=sorted(anchors)).values_list(
            "pk", flat=True
        )
    )
    found: list[str] = []
    for compaction_id, raw in compactions:
        if compaction_id in seqs:
            continue
        event = compaction_event(Entry(type=COMPACTION, event=raw))
        if quoted_entry_ids(event) & seqs.keys():
            found.append(compaction_id)
            continue
        first_kept = event.get("first_kept_entry_id")
        covered_to = event.get("covered_to_entry_id")
        if first_kept in standing:
            leaf, inclusive = str(first_kept), False
        elif covered_to in standing:
            leaf, inclusive = str(covered_to), True
        else:
            leaf, inclusive = compaction_id, False
        covered = on_branch(thread_id, leaf, seqs)
        if not inclusive:
            covered.discard(leaf)
        if covered:
            found.append(compaction_id)
    return found
