"""Redaction: an entry keeps its place in the tree and loses what it said."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from cogitator_memory import dependents, signals
from cogitator_memory.exceptions import EntryNotFound, InvalidInput, RedactionRefused
from cogitator_memory.grants import Grants
from cogitator_memory.threads.locking import lock_entry_thread
from cogitator_memory.threads.models import REDACTED_KEY, REDACTED_TEXT, Entry, Role
from cogitator_memory.threads.validation import validate_text
from cogitator_memory.tokens import count_entry_tokens

__all__ = ["redact_entry"]


def _redacted_tool_calls(tool_calls: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    if tool_calls is None:
        return None
    # Only the call's identity survives; arguments, replay state and argument errors go.
    kept_keys = ("id", "name", "type")
    return [
        {**{key: call[key] for key in kept_keys if key in call}, "arguments": REDACTED_TEXT}
        for call in tool_calls
    ]


def _redacted_tool_results(
    tool_results: list[dict[str, Any]] | None,
) -> list[dict[str, Any]] | None:
    if tool_results is None:
        return None
    kept_keys = ("callId", "call_id", "tool_call_id", "name")
    return [
        {**{key: result[key] for key in kept_keys if key in result}, "result": REDACTED_TEXT}
        for result in tool_results
    ]


@transaction.atomic
def redact_entry(
    entry_id: str,
    *,
    at: datetime | None = None,
    reason: str | None = None,
    grants: Grants | None = None,
) -> Entry | None:
    """Replace what an entry said with ``[redacted]`` and keep its place in the tree.

    The text of a message or tool_result, the arguments of its tool calls and the results
    of its tools become ``[redacted]``; its parent, seq, role and call ids stay; a user
    message loses its sender name; ``metadata.redacted`` and ``redaction`` record when
    and why. What stands on the entry (its vectors) goes in the same transaction.
    Returns None for a missing entry (or one ``grants`` do not reach); raises
    ``RedactionRefused`` for a session event (events are deleted, not redacted).
    """
    validate_text(reason, "reason", max_length=1000)
    if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
        raise InvalidInput({"at": "at must be a datetime with a time zone."})
    try:
        _thread, entry = lock_entry_thread(entry_id, grants=grants)
    except EntryNotFound:
        return None
    if entry.is_event:
        raise RedactionRefused(entry_id, entry.type)
    moment = at or timezone.now()
    redaction: dict[str, Any] = {"at": moment.isoformat()}
    if reason:
        redaction["reason"] = reason
    entry.content = REDACTED_TEXT
    entry.tool_calls = _redacted_tool_calls(entry.tool_calls)
    entry.tool_results = _redacted_tool_results(entry.tool_results)
    if entry.role == Role.USER:
        entry.name = None
    entry.metadata = {**(entry.metadata or {}), REDACTED_KEY: redaction}
    entry.redaction = redaction
    entry.token_count = count_entry_tokens(entry)
    entry.save(
        update_fields=[
            "content",
            "tool_calls",
            "tool_results",
            "name",
            "metadata",
            "redaction",
            "token_count",
        ]
    )
    dependents.forget_entries([entry.pk])
    transaction.on_commit(lambda: signals.entry_redacted.send(sender=Entry, entry=entry))
    return entry
