"""The history of a context: entries as messages and as blocks of the recent partition,
the note a large tool result leaves in its place, and the cache breakpoints.

An entry costs what ``tokens.count_entry_tokens`` estimates (text, tool call arguments,
tool results, images), whatever its saved ``token_count`` says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cogitator_memory.compaction.history import SUMMARY_INTRO, compaction_event
from cogitator_memory.context.assembler import ContextBlock
from cogitator_memory.threads.models import EntryType, Role
from cogitator_memory.threads.text import entry_text
from cogitator_memory.tokens import count_entry_tokens, count_message_tokens

__all__ = [
    "CACHE_BREAKPOINT",
    "entry_block",
    "entry_message",
    "is_turn_start",
    "mark_turn_ends",
    "summary_block",
    "summary_message",
    "tool_note",
    "trim_to_turn_start",
]

CACHE_BREAKPOINT = "cache_breakpoint"


def is_tool_result(entry: Any) -> bool:
    return entry.type == EntryType.TOOL_RESULT or entry.role == Role.TOOL


def is_turn_start(entry: Any) -> bool:
    """A user's message opens a turn; replies and tool results belong to it."""
    return entry.type == EntryType.MESSAGE and entry.role == Role.USER


def entry_message(entry: Any) -> dict[str, Any]:
    """One history entry as a chat message: its role and content as stored (parts and
    images included), with its name, tool calls and tool call id when it has them. A tool
    result without content gets the text of its results."""
    role = entry.role or (Role.TOOL if is_tool_result(entry) else Role.USER)
    content: Any = entry.content
    if content in (None, "", []) and is_tool_result(entry):
        content = entry_text(entry)
    message: dict[str, Any] = {"role": str(role), "content": content if content is not None else ""}
    if entry.name:
        message["name"] = entry.name
    if entry.tool_calls:
        message["tool_calls"] = entry.tool_calls
    if entry.tool_call_id:
        message["tool_call_id"] = entry.tool_call_id
    return message


def tool_note(entry: Any, tokens: int) -> dict[str, Any]:
    """What stands in for a tool result too large for the room left: a short note, with
    the tool call id so the call keeps its answer."""
    name = entry.name or entry.tool_call_id or "tool"
    message: dict[str, Any] = {
        "role": str(entry.role or Role.TOOL),
        "content": f"[The result of {name} ({tokens} tokens) was left out to fit the context.]",
    }
    if entry.tool_call_id:
        message["tool_call_id"] = entry.tool_call_id
    return message


def entry_block(entry: Any, *, with_note: bool = True) -> ContextBlock:
    """A history entry as a block of the recent partition; a tool result gets its note as
    the fallback (``with_note``)."""
    tokens = count_entry_tokens(entry)
    fallback = None
    if with_note and is_tool_result(entry):
        note = tool_note(entry, tokens)
        fallback = ContextBlock(
            "recent",
            note["content"],
            count_message_tokens(note),
            source_id=entry.pk,
            payload=(entry, note),
        )
    return ContextBlock(
        "recent",
        entry_text(entry),
        tokens,
        source_id=entry.pk,
        fallback=fallback,
        payload=(entry, entry_message(entry)),
    )


def summary_message(entry: Any) -> dict[str, Any]:
    """The compaction summary as the message a reader gets before the history (a user
    message: the only system message is the first one)."""
    summary = str(compaction_event(entry).get("summary") or "")
    return {"role": str(Role.USER), "content": SUMMARY_INTRO + summary}


def summary_block(entry: Any) -> ContextBlock:
    message = summary_message(entry)
    return ContextBlock(
        "summaries",
        str(compaction_event(entry).get("summary") or ""),
        count_message_tokens(message),
        source_id=entry.pk,
        payload=(entry, message),
    )


def trim_to_turn_start(
    kept: Sequence[Any], history: Sequence[Any], *, complete: bool = True
) -> tuple[list[Any], list[Any]]:
    """``kept`` (a run of the newest entries of ``history``, oldest first) without the
    replies at its start whose message was left out, so a reply never appears without the
    message it answers; a run from the start of a ``complete`` history is kept whole.
    Returns (kept, trimmed)."""
    if not kept or (complete and history and kept[0].pk == history[0].pk):
        return list(kept), []
    start = 0
    while start < len(kept) and not is_turn_start(kept[start]):
        start += 1
    return list(kept[start:]), list(kept[:start])


def mark_turn_ends(messages: list[dict[str, Any]], entries: Sequence[Any | None]) -> None:
    """Put ``cache_breakpoint: True`` on the last message and on the last message of the
    turn before it. ``entries`` gives each message's entry (None for the summary)."""
    if not messages:
        return
    messages[-1][CACHE_BREAKPOINT] = True
    last_start = None
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry is not None and is_turn_start(entry):
            last_start = index
            break
    if last_start is not None and last_start > 0:
        messages[last_start - 1][CACHE_BREAKPOINT] = True
