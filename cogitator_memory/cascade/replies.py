"""The replies of a user message: what goes with it.

A user message takes its replies when it goes: the entries after it on every branch up to
the next user message, events such as a model change among them, since an answer may say
again what the message said. They are found by walking down from the message through the
children of each entry (the index on ``parent``), so the cost follows the replies, not the
thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cogitator_memory.threads.models import EVENT_TYPES, Entry, EntryType, Role

__all__ = ["EntryRow", "entry_rows", "is_user_message", "replies_of"]

# Ids per query (SQLite bounds the parameters of one statement).
IDS_PER_QUERY = 500

_COLUMNS = ("pk", "thread_id", "type", "role", "redaction")


@dataclass(frozen=True)
class EntryRow:
    """What a cascade reads of an entry to decide what becomes of it."""

    id: str
    thread_id: str
    type: str
    role: str | None
    redacted: bool

    @property
    def is_event(self) -> bool:
        return self.type in EVENT_TYPES


def _row(values: tuple[Any, ...]) -> EntryRow:
    pk, thread_id, type_, role, redaction = values
    return EntryRow(pk, thread_id, type_, role, redaction is not None)


def is_user_message(row: EntryRow) -> bool:
    return row.type == EntryType.MESSAGE and row.role == Role.USER


def entry_rows(entry_ids: Iterable[str], *, thread_id: str | None = None) -> list[EntryRow]:
    """The entries of these ids that stand (of ``thread_id`` only, when given)."""
    ids = list(dict.fromkeys(entry_ids))
    rows: list[EntryRow] = []
    for start in range(0, len(ids), IDS_PER_QUERY):
        found = Entry.objects.filter(pk__in=ids[start : start + IDS_PER_QUERY])
        if thread_id is not None:
            found = found.filter(thread_id=thread_id)
        rows.extend(_row(values) for values in found.values_list(*_COLUMNS))
    return rows


def replies_of(messages: Iterable[EntryRow]) -> list[EntryRow]:
    """The replies of the user messages among ``messages``: their descendants on every
    branch, each walk stopping before the next user message."""
    frontier = [row.id for row in messages if is_user_message(row)]
    seen = set(frontier)
    replies: list[EntryRow] = []
    while frontier:
        step: list[str] = []
        for start in range(0, len(frontier), IDS_PER_QUERY):
            children = Entry.objects.filter(
                parent_id__in=frontier[start : start + IDS_PER_QUERY]
            ).values_list(*_COLUMNS)
            for values in children:
                child = _row(values)
                if child.id in seen or is_user_message(child):
                    continue
                seen.add(child.id)
                replies.append(child)
                step.append(child.id)
        frontier = step
    return replies
