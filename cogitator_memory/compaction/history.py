"""Reading a branch through its newest compaction.

A compaction entry (``type="compaction"``) sits at the end of the branch it compacted, a
child of the leaf it found, with the event::

    {"strategy": "summary" | "hierarchical",
     "summary": <the text a reader gets first>,
     "first_kept_entry_id": <the first entry kept verbatim, or None>,
     "covered_to_entry_id": <the last entry summarized>,
     "levels": <hierarchical only: {"saga": ..., "arcs": [...], "chapters": [...]}>}

``compacted_history(path)`` gives a branch as a reader gets it: the newest compaction entry
first (its summary is the one system-like message, ``history_messages`` renders it so),
then the entries it kept and everything after it (read the path with
``types=HISTORY_ENTRY_TYPES``, or ``"all"``). Nothing is deleted: ``get_entries`` and
``get_path`` still return every entry, and other branches keep the summarized ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cogitator_memory.conf import memory_settings
from cogitator_memory.grants import Grants
from cogitator_memory.llm.protocol import Message
from cogitator_memory.threads.models import Entry, EntryType
from cogitator_memory.threads.paths import branch_chunks, doubling
from cogitator_memory.threads.selectors import entry_in_thread, visible_thread
from cogitator_memory.threads.text import entry_text

__all__ = [
    "HISTORY_ENTRY_TYPES",
    "compacted_history",
    "compaction_event",
    "history_messages",
    "latest_compaction_index",
    "read_compacted_history",
]

COMPACTION = EntryType.COMPACTION.value
# The types to read a path with for ``compacted_history``: the conversation and compactions.
HISTORY_ENTRY_TYPES = (EntryType.MESSAGE.value, EntryType.TOOL_RESULT.value, COMPACTION)
SUMMARY_INTRO = "Summary of the conversation so far:\n"


def compaction_event(entry: Entry) -> dict[str, Any]:
    """The event of a compaction entry (an empty dict for another entry)."""
    if entry.type != COMPACTION or not isinstance(entry.event, dict):
        return {}
    return entry.event


def latest_compaction_index(path: Sequence[Entry]) -> int | None:
    """The position of the newest compaction entry of ``path`` (oldest first), or None."""
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == COMPACTION:
            return index
    return None


def compacted_history(path: Sequence[Entry]) -> list[Entry]:
    """``path`` (a branch, oldest first) as a reader gets it: the newest compaction entry,
    the entries it kept verbatim, then everything after it. Older compaction entries and
    the summarized entries are left out. A path with no compaction comes back whole."""
    index = latest_compaction_index(path)
    if index is None:
        return list(path)
    compaction = path[index]
    first_kept = compaction_event(compaction).get("first_kept_entry_id")
    kept: list[Entry] = []
    if first_kept is not None:
        start = next((i for i in range(index) if path[i].pk == first_kept), None)
        if start is not None:
            kept = [entry for entry in path[start:index] if entry.type != COMPACTION]
    return [compaction, *kept, *path[index + 1 :]]


def read_compacted_history(
    thread_id: str, leaf_id: str | None = None, *, grants: Grants | None = None
) -> list[Entry]:
    """The compacted history of the branch ending at ``leaf_id`` (the active leaf by
    default), read from the leaf back to the first kept entry of the newest compaction
    only, so its cost follows the history since that compaction, not the thread.

    Raises ``ThreadNotFound`` (also for a thread ``grants`` do not reach) and
    ``EntryNotInThread`` for a leaf of another thread.
    """
    thread = visible_thread(thread_id, grants)
    start = (
        entry_in_thread(leaf_id, thread_id, field="leaf_id").pk
        if leaf_id is not None
        else thread.active_leaf_id
    )
    found: list[Entry] = []  # newest first
    stops: set[str] | None = None  # once the compaction is met: where to stop
    steps = doubling(32, memory_settings.PATH_WALK_STEP)
    for chunk in branch_chunks(thread_id, start, thread.fork_seq, steps):
        done = False
        for entry in chunk:
            found.append(entry)
            if stops is None and entry.type == COMPACTION:
                event = compaction_event(entry)
                stops = {
                    str(value)
                    for value in (
                        event.get("first_kept_entry_id"),
                        event.get("covered_to_entry_id"),
                    )
                    if value is not None
                }
                if not event.get("first_kept_entry_id"):
                    done = True
                    break
            elif stops is not None and entry.pk in stops:
                done = True
                break
        if done:
            break
    found.reverse()
    return compacted_history(found)


def history_messages(history: Sequence[Entry]) -> list[Message]:
    """A compacted history as model messages: a compaction entry becomes one system
    message of its summary, a tool result a user message naming the tool, events other
    than compactions are left out."""
    messages: list[Message] = []
    for entry in history:
        if entry.type == COMPACTION:
            summary = str(compaction_event(entry).get("summary") or "")
            messages.append({"role": "system", "content": SUMMARY_INTRO + summary})
        elif entry.type in (EntryType.MESSAGE, EntryType.TOOL_RESULT):
            messages.append(entry_message(entry))
    return messages


def entry_message(entry: Entry) -> Message:
    """One conversation entry as a model message."""
    text = entry_text(entry)
    if entry.type == EntryType.TOOL_RESULT or entry.role == "tool":
        name = entry.name or entry.tool_call_id or "tool"
        return {"role": "user", "content": f"[tool result {name}] {text}"}
    if entry.role == "assistant":
        return {"role": "assistant", "content": text}
    if entry.role == "system":
        return {"role": "system", "content": text}
    return {"role": "user", "content": text}
