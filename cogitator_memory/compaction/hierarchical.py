"""Hierarchical compaction: the summary kept as a tree of what the conversation established.

The interface the compaction service calls for strategy ``"hierarchical"``::

    compact_levels(entries, previous_levels, config, summarize) -> CompactedLevels

- ``entries``: the ``Entry`` rows new since the last compaction up to the kept tail, in
  branch order (session events, redacted entries and entries without text or tool calls
  are skipped).
- ``previous_levels``: the ``event["levels"]`` of the previous compaction entry, or None.
- ``config``: any object with ``chapter_tokens`` (4000), ``chapter_concurrency`` (1),
  ``chapters_per_arc`` (4), ``arcs_per_saga`` (4), ``summary_model``, ``summary_prompt``
  (``compaction.config.CompactionConfig`` fits; ``max_tokens`` is read when present).
- ``summarize``: a ``cogitator_memory.llm`` ``Summarize``.
- Returns ``CompactedLevels``: ``levels`` (JSON-serializable, to store as
  ``event["levels"]``), ``handoff`` (the compaction entry's message), ``calls`` (model
  calls made) and ``chapters`` (chapters read).
- Raises ``CompactionDropsOpenItems`` when the new levels would not hold an open item of the
  previous ones (the caller writes nothing), ``CompactionAnswerError`` when a chapter is
  answered without an array three times, ``LLMError`` when the model fails.

``keep_recent_turns(entries, keep_recent_tokens)`` picks the kept tail: the newest whole
turns (each opening with a user message, so a tool call keeps its result) within that many
tokens. ``chapter_atoms(window, config, own, open, summarize=...)`` (``compaction.atoms``)
reads one window.

Levels (``CompactionLevels``)::

    {"version": 1,
     "saga": node or None, "arcs": [node, …], "chapters": [node, …]}
    node = {"from": first entry id, "to": last entry id, "atoms": [atom, …]}

How they grow:

- The entries are read in chapters of about ``chapter_tokens`` tokens (``tokens``), each
  window opening with the end of the chapter before (its last entries, up to an eighth of
  ``chapter_tokens``, at least one), ``chapter_concurrency`` chapters at a time (a thread
  pool); chapters read together are told the items open before them, and their atoms are
  applied in order.
- An item (task, decision, constraint, error, thread) opened stays open until an atom
  whose evidence holds closes it; a closed one opens again only by such an atom
  (``apply_atom``). An unverified atom about an item already known changes nothing.
- Chapters beyond ``chapters_per_arc`` fold, oldest first, ``chapters_per_arc`` at a time,
  into an arc; arcs beyond ``arcs_per_saga`` fold, ``arcs_per_saga`` at a time, into the
  saga, with no model: one atom per item, in its current state. The saga keeps every open
  item and the newest ``SAGA_KEEP`` (200) facts, 200 files and 200 closed items, so the
  handoff stops growing.
- The new levels must hold every item open in the previous ones, open or closed by an atom
  whose evidence holds (``check_keeps_open``).
- ``handoff_text`` writes the current state in a fixed section order: Open tasks,
  Constraints, Decisions, Unresolved errors, Open questions, Files, Facts, Done.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from cogitator_memory.compaction.atoms import ITEM_KINDS, Atom, chapter_atoms, entry_atoms
from cogitator_memory.exceptions import CompactionDropsOpenItems
from cogitator_memory.llm.protocol import Summarize
from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry, Role
from cogitator_memory.threads.text import entry_text
from cogitator_memory.tokens import count_entry_tokens

__all__ = [
    "SAGA_KEEP",
    "SECTIONS",
    "CompactedLevels",
    "HierarchicalConfig",
    "apply_atom",
    "chapter_atoms",
    "chapter_windows",
    "check_keeps_open",
    "compact_levels",
    "current_items",
    "entry_atoms",
    "fold",
    "handoff_text",
    "keep_recent_turns",
    "open_items",
]

LEVELS_VERSION = 1
SAGA_KEEP = 200
OVERLAP_SHARE = 8

Levels = dict[str, Any]
Node = dict[str, Any]


class HierarchicalConfig(Protocol):
    """What ``compact_levels`` reads of a config (read-only: a frozen dataclass serves)."""

    @property
    def chapter_tokens(self) -> int: ...
    @property
    def chapter_concurrency(self) -> int: ...
    @property
    def chapters_per_arc(self) -> int: ...
    @property
    def arcs_per_saga(self) -> int: ...
    @property
    def summary_model(self) -> str | None: ...
    @property
    def summary_prompt(self) -> str | None: ...


@dataclass(frozen=True)
class CompactedLevels:
    levels: Levels
    handoff: str
    calls: int = 0
    chapters: int = 0


# --- items: their state through the atoms -----------------------------------------------------


def apply_atom(state: dict[str, Atom], atom: Atom) -> None:
    """Apply ``atom`` to ``state`` (key -> atom, in order of first mention): a new key is
    taken as the atom says; a known item changes status only by a verified atom; a verified
    atom of the same status refreshes it (newer text and evidence)."""
    key = atom["key"]
    known = state.get(key)
    if known is None:
        state[key] = atom
        return
    if not atom.get("verified"):
        return
    # Moved to the end: the newest mention is the newest.
    del state[key]
    state[key] = atom


def current_items(levels: Levels | None) -> dict[str, Atom]:
    """Every item and fact of ``levels``, in its current state: the saga's atoms, then the
    arcs', then the chapters', applied in order."""
    state: dict[str, Atom] = {}
    for node in _nodes(levels):
        for atom in node.get("atoms") or ():
            if isinstance(atom, dict) and "key" in atom:
                apply_atom(state, atom)
    return state


def open_items(levels: Levels | None) -> list[Atom]:
    return [a for a in current_items(levels).values() if _is_open(a)]


def _is_open(atom: Atom) -> bool:
    return atom["kind"] in ITEM_KINDS and atom["status"] == "open"


def _nodes(levels: Levels | None) -> list[Node]:
    if not levels:
        return []
    saga = levels.get("saga")
    return [
        *([saga] if isinstance(saga, dict) else []),
        *(n for n in levels.get("arcs") or () if isinstance(n, dict)),
        *(n for n in levels.get("chapters") or () if isinstance(n, dict)),
    ]


def check_keeps_open(previous: Levels | None, new: Levels) -> None:
    """Raise ``CompactionDropsOpenItems`` unless every item open in ``previous`` is in
    ``new``, open, or closed by an atom whose evidence holds."""
    now = current_items(new)
    dropped = []
    for key, atom in current_items(previous).items():
        if not _is_open(atom):
            continue
        kept = now.get(key)
        if kept is None or (kept["status"] != "open" and not kept.get("verified")):
            dropped.append(f"{atom['kind']}: {atom['text']}")
    if dropped:
        raise CompactionDropsOpenItems(dropped)


# --- chapters, arcs and the saga ---------------------------------------------------------------


def _readable(entry: Entry) -> bool:
    if entry.type not in CONVERSATION_TYPES or entry.is_redacted:
        return False
    return bool(entry_text(entry).strip() or entry.tool_calls or entry.tool_results)


def chapter_windows(
    entries: Sequence[Entry], chapter_tokens: int
) -> list[tuple[list[Entry], list[Entry]]]:
    """``(window, own)`` per chapter: ``own`` the entries of about ``chapter_tokens`` tokens
    (an entry longer than that is a chapter of its own), ``window`` them after the end of
    the chapter before."""
    chapters: list[list[Entry]] = []
    current: list[Entry] = []
    used = 0
    for entry in entries:
        if not _readable(entry):
            continue
        tokens = count_entry_tokens(entry)
        if current and used + tokens > chapter_tokens:
            chapters.append(current)
            current, used = [], 0
        current.append(entry)
        used += tokens
    if current:
        chapters.append(current)
    windows = []
    for index, own in enumerate(chapters):
        overlap: list[Entry] = []
        if index:
            budget = max(1, chapter_tokens // OVERLAP_SHARE)
            used = 0
            for entry in reversed(chapters[index - 1]):
                tokens = count_entry_tokens(entry)
                if overlap and used + tokens > budget:
                    break
                overlap.insert(0, entry)
                used += tokens
        windows.append((overlap + own, own))
    return windows


def _merged(nodes: Sequence[Node]) -> Node:
    state: dict[str, Atom] = {}
    for node in nodes:
        for atom in node.get("atoms") or ():
            apply_atom(state, atom)
    return {"from": nodes[0].get("from"), "to": nodes[-1].get("to"), "atoms": list(state.values())}


def _capped(node: Node) -> Node:
    """The saga's atoms: every open item, the newest ``SAGA_KEEP`` facts, files and closed
    items (the state keeps the newest mention last)."""
    atoms = node["atoms"]
    kept_ids: set[int] = set()
    for group in ("fact", "file", "done"):
        members = [
            i
            for i, atom in enumerate(atoms)
            if not _is_open(atom)
            and (atom["kind"] == group or (group == "done" and atom["kind"] in ITEM_KINDS))
        ]
        kept_ids.update(members[-SAGA_KEEP:])
    return {
        **node,
        "atoms": [a for i, a in enumerate(atoms) if _is_open(a) or i in kept_ids],
    }


def fold(levels: Levels, chapters_per_arc: int, arcs_per_saga: int) -> Levels:
    """Chapters beyond ``chapters_per_arc`` into arcs, arcs beyond ``arcs_per_saga`` into
    the saga, oldest first, with no model."""
    chapters = list(levels.get("chapters") or ())
    arcs = list(levels.get("arcs") or ())
    saga = levels.get("saga")
    per_arc, per_saga = max(1, chapters_per_arc), max(1, arcs_per_saga)
    while len(chapters) > per_arc:
        arcs.append(_merged(chapters[:per_arc]))
        chapters = chapters[per_arc:]
    while len(arcs) > per_saga:
        saga = _capped(_merged([*([saga] if saga else []), *arcs[:per_saga]]))
        arcs = arcs[per_saga:]
    return {"version": LEVELS_VERSION, "saga": saga, "arcs": arcs, "chapters": chapters}


# --- the compaction ---------------------------------------------------------------------------


def compact_levels(
    entries: Sequence[Entry],
    previous_levels: Levels | None,
    config: HierarchicalConfig,
    summarize: Summarize,
) -> CompactedLevels:
    """The levels after reading ``entries`` on top of ``previous_levels``, and the handoff
    (see the module's doc)."""
    levels: Levels = {
        "version": LEVELS_VERSION,
        "saga": (previous_levels or {}).get("saga"),
        "arcs": list((previous_levels or {}).get("arcs") or ()),
        "chapters": list((previous_levels or {}).get("chapters") or ()),
    }
    state = current_items(levels)
    counting = _Counting(summarize)
    windows = chapter_windows(entries, max(1, config.chapter_tokens))
    concurrency = max(1, getattr(config, "chapter_concurrency", 1) or 1)

    def read(window_own: tuple[list[Entry], list[Entry]], open_now: list[Atom]) -> list[Atom]:
        window, own = window_own
        return chapter_atoms(window, config, own, open_now, summarize=counting)

    for start in range(0, len(windows), concurrency):
        batch = windows[start : start + concurrency]
        open_now = [a for a in state.values() if _is_open(a)]
        if concurrency == 1 or len(batch) == 1:
            results = [read(batch[0], open_now)]
        else:
            with ThreadPoolExecutor(max_workers=len(batch)) as pool:
                results = list(pool.map(read, batch, [open_now] * len(batch)))
        for (_window, own), atoms in zip(batch, results, strict=True):
            for atom in atoms:
                apply_atom(state, atom)
            levels["chapters"].append({"from": own[0].pk, "to": own[-1].pk, "atoms": atoms})
    folded = fold(levels, config.chapters_per_arc, config.arcs_per_saga)
    check_keeps_open(previous_levels, folded)
    return CompactedLevels(
        levels=folded,
        handoff=handoff_text(folded),
        calls=counting.calls,
        chapters=len(windows),
    )


class _Counting:
    """The summarizer, counting its calls (from any thread)."""

    def __init__(self, summarize: Summarize) -> None:
        self.summarize = summarize
        self.provider = getattr(summarize, "provider", "")
        self.model = getattr(summarize, "model", "")
        self.calls = 0

    def __call__(self, messages: Any, **options: Any) -> Any:
        self.calls += 1
        return self.summarize(messages, **options)


# --- the handoff ------------------------------------------------------------------------------

SECTIONS = (
    "Open tasks",
    "Constraints",
    "Decisions",
    "Unresolved errors",
    "Open questions",
    "Files",
    "Facts",
    "Done",
)
OPEN_SECTION = {
    "task": "Open tasks",
    "constraint": "Constraints",
    "decision": "Decisions",
    "error": "Unresolved errors",
    "thread": "Open questions",
}


def _section(atom: Atom) -> str:
    if atom["kind"] == "file":
        return "Files"
    if atom["kind"] == "fact":
        return "Facts"
    return OPEN_SECTION[atom["kind"]] if atom["status"] == "open" else "Done"


def handoff_text(levels: Levels) -> str:
    """The current state of ``levels`` as text, every section in ``SECTIONS`` order (an empty
    one says so), an atom whose evidence does not hold marked unverified."""
    grouped: dict[str, list[str]] = {name: [] for name in SECTIONS}
    for atom in current_items(levels).values():
        mark = "" if atom.get("verified") else " (unverified)"
        grouped[_section(atom)].append(f"- {atom['text']}{mark}")
    blocks = [f"## {name}\n" + ("\n".join(lines) or "- none") for name, lines in grouped.items()]
    return "\n\n".join(blocks)


# --- the kept tail ----------------------------------------------------------------------------


def keep_recent_turns(entries: Sequence[Entry], keep_recent_tokens: int) -> list[Entry]:
    """The newest whole turns of ``entries`` (each from a user message up to the next one)
    whose tokens together fit ``keep_recent_tokens``; entries before the first user message
    are never kept. A suffix of ``entries``, possibly empty."""
    entries = list(entries)
    starts = [
        i
        for i, entry in enumerate(entries)
        if entry.role == Role.USER and entry.type in CONVERSATION_TYPES
    ]
    kept_from = len(entries)
    used = 0
    for start in reversed(starts):
        tokens = sum(count_entry_tokens(entry) for entry in entries[start:kept_from])
        if used + tokens > keep_recent_tokens:
            break
        used += tokens
        kept_from = start
    return entries[kept_from:]
