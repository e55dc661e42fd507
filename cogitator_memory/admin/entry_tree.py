"""The entry tree a thread's admin page shows: every branch, the active path marked."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db.models import BooleanField, ExpressionWrapper, Q
from django.utils.text import Truncator

from cogitator_memory.jsondata import storable_text
from cogitator_memory.threads.models import Entry, Thread

PREVIEW_CHARS = 120


def content_preview(content: Any, *, chars: int = PREVIEW_CHARS) -> str:
    """The text of an entry's content, shortened; other content parts by their type."""
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part, dict):
                pieces.append(f"[{part.get('type', 'part')}]")
        content = " ".join(pieces)
    return Truncator(" ".join(str(content or "").split())).chars(chars)


# --- the entry tree of a thread's page -------------------------------------------------


@dataclass
class EntryNode:
    """One entry of the tree, with what the page shows of it."""

    entry: Entry
    children: list[EntryNode] = field(default_factory=list)
    on_active_path: bool = False
    is_active_leaf: bool = False
    # The entry the page was opened for (a quote's "Open the entry in its thread").
    is_highlighted: bool = False
    # Set when the parent is older than the entries shown (the tree is capped).
    parent_hidden: bool = False
    parent_seq: int | None = None

    @property
    def has_branches(self) -> bool:
        return len(self.children) > 1

    @property
    def preview(self) -> str:
        return content_preview(self.entry.content)

    @property
    def event_summary(self) -> str:
        payload = json.dumps(self.entry.event, ensure_ascii=False, sort_keys=True, default=str)
        return Truncator(payload).chars(PREVIEW_CHARS)

    @property
    def redaction_reason(self) -> str:
        redaction = self.entry.redaction if isinstance(self.entry.redaction, dict) else {}
        return str(redaction.get("reason") or "")


@dataclass(frozen=True)
class TreeStep:
    """One step of the flat walk the template renders as nested lists.

    Kinds: ``branches_open``/``branches_close`` (a list of sibling branches),
    ``branch_open``/``branch_close`` (one branch: a chain of entries), ``entry`` (left
    open when the entry forks into branches) and ``entry_close``.
    """

    kind: str
    node: EntryNode | None = None
    active: bool = False


@dataclass
class EntryTree:
    steps: list[TreeStep]
    shown: int
    limit: int
    truncated: bool
    # True when the active leaf is among the entries left out.
    active_leaf_hidden: bool
    # The entry the page was opened for, when it is among the entries left out.
    highlight_hidden: str | None = None


def _tree_steps(roots: list[EntryNode]) -> list[TreeStep]:
    # An explicit stack instead of recursive includes: a thread can fork hundreds of
    # times, deeper than the template engine's recursion should go.
    steps = [TreeStep("branches_open")]
    work: list[TreeStep | EntryNode] = [TreeStep("branches_close"), *reversed(roots)]
    while work:
        item = work.pop()
        if isinstance(item, TreeStep):
            steps.append(item)
            continue
        steps.append(TreeStep("branch_open", node=item, active=item.on_active_path))
        node = item
        steps.append(TreeStep("entry", node=node))
        while len(node.children) == 1:
            node = node.children[0]
            steps.append(TreeStep("entry", node=node))
        work.append(TreeStep("branch_close"))
        if node.has_branches:
            steps.append(TreeStep("branches_open"))
            work.extend([TreeStep("entry_close"), TreeStep("branches_close")])
            work.extend(reversed(node.children))
    return steps


def build_entry_tree(thread: Thread, *, limit: int, highlight: str | None = None) -> EntryTree:
    """The newest ``limit`` entries of ``thread`` as a forest, read in one query, the
    entry ``highlight`` marked (a quote's link opens the thread on it).

    A parent's seq is always lower than its children's, so the entries shown are closed
    under "child of": only roots can have a parent left out.
    """
    rows = list(
        Entry.objects.of_thread(thread.pk)
        # Tool calls, results and metadata can be large and the tree shows none of them.
        .defer("tool_calls", "tool_results", "metadata")
        .annotate(
            has_tool_calls=ExpressionWrapper(
                Q(tool_calls__isnull=False), output_field=BooleanField()
            )
        )
        .order_by("-seq")[: limit + 1]
    )
    truncated = len(rows) > limit
    entries = list(reversed(rows[:limit]))
    nodes = {entry.pk: EntryNode(entry) for entry in entries}

    cursor = nodes.get(thread.active_leaf_id) if thread.active_leaf_id else None
    if cursor is not None:
        cursor.is_active_leaf = True
    while cursor is not None:
        cursor.on_active_path = True
        parent_id = cursor.entry.parent_id
        cursor = nodes.get(parent_id) if parent_id else None

    highlighted = nodes.get(highlight) if highlight else None
    if highlighted is not None:
        highlighted.is_highlighted = True
    # Asked for and not shown: older than the entries shown, when the thread has it.
    highlight_hidden = (
        highlight
        if highlight
        and highlighted is None
        and truncated
        and storable_text(highlight)
        and Entry.objects.filter(pk=highlight, thread=thread).exists()
        else None
    )

    roots: list[EntryNode] = []
    for entry in entries:
        node = nodes[entry.pk]
        parent = nodes.get(entry.parent_id) if entry.parent_id else None
        if parent is None:
            node.parent_hidden = entry.parent_id is not None
            roots.append(node)
        else:
            node.parent_seq = parent.entry.seq
            parent.children.append(node)
    return EntryTree(
        steps=_tree_steps(roots),
        shown=len(entries),
        limit=limit,
        truncated=truncated,
        active_leaf_hidden=thread.active_leaf_id is not None and thread.active_leaf_id not in nodes,
        highlight_hidden=highlight_hidden,
    )


# --- threads ---------------------------------------------------------------------------
