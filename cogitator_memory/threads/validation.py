"""Checks of the fields of new threads and entries, before anything is written."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from cogitator_memory.exceptions import InvalidEntry, InvalidInput
from cogitator_memory.grants import memory_users, thread_owner
from cogitator_memory.jsondata import json_problem, text_problem
from cogitator_memory.limits import is_whole_number
from cogitator_memory.threads.models import CONVERSATION_TYPES, EVENT_TYPES, EntryType, Role

THREAD_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,254}$")
# The largest token count a row holds (a 32-bit integer column on PostgreSQL).
MAX_TOKEN_COUNT = 2**31 - 1
KNOWN_TYPES = [choice.value for choice in EntryType]
KNOWN_ROLES = [choice.value for choice in Role]


def validate_thread_id(thread_id: Any, *, field: str = "thread_id") -> str:
    if not isinstance(thread_id, str) or not THREAD_ID_PATTERN.fullmatch(thread_id):
        raise InvalidInput(
            {
                field: "A thread id is 1 to 255 characters: letters, digits and _ . : @ -, "
                "starting with a letter or digit."
            }
        )
    return thread_id


def validate_agent_id(agent_id: Any) -> str:
    if not isinstance(agent_id, str) or not agent_id.strip() or len(agent_id) > 255:
        raise InvalidInput(
            {"agent_id": "An agent id is a non-empty text of at most 255 characters."}
        )
    problem = text_problem(agent_id)
    if problem:
        raise InvalidInput({"agent_id": problem})
    return agent_id


def validate_text(value: Any, field: str, *, max_length: int) -> str | None:
    """A plain text field: None, or a text of at most ``max_length`` that can be stored."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > max_length:
        raise InvalidInput({field: f"Must be a text of at most {max_length} characters."})
    problem = text_problem(value)
    if problem:
        raise InvalidInput({field: problem})
    return value


def validate_metadata(metadata: Any, *, field: str = "metadata") -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput({field: f"Metadata must be an object, not {type(metadata).__name__}."})
    if not all(isinstance(key, str) for key in metadata):
        raise InvalidInput({field: "Metadata keys must be texts."})
    _require_json(metadata, field, InvalidInput)
    # A deep copy through JSON: the caller's dict and the stored one never share state.
    copied: dict[str, Any] = json.loads(json.dumps(metadata))
    return copied


def validate_thread_metadata(metadata: Any) -> dict[str, Any]:
    """``validate_metadata``, ``metadata.userId`` absent, null or a non-empty text
    (``grants.thread_owner``), and ``metadata.memoryUserIds`` absent, null or a list of
    user ids (``grants.memory_users``)."""
    clean = validate_metadata(metadata)
    thread_owner(clean)
    memory_users(clean)
    return clean


def _require_json(value: Any, field: str, error: type[InvalidInput]) -> None:
    problem = json_problem(value)
    if problem:
        raise error({field: f"Must be JSON data: {problem}"})


def _check_tool_calls(tool_calls: Any, errors: dict[str, list[str]]) -> None:
    if tool_calls is None:
        return
    if not isinstance(tool_calls, list):
        errors.setdefault("tool_calls", []).append("Tool calls must be a list.")
        return
    for index, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            errors.setdefault("tool_calls", []).append(f"Tool call {index} must be an object.")
            continue
        for key in ("id", "name"):
            if not isinstance(call.get(key), str) or not call.get(key):
                errors.setdefault("tool_calls", []).append(
                    f"Tool call {index} needs a non-empty text {key!r}."
                )


IMAGE_PART_TYPES = frozenset({"image", "image_url", "input_image"})
IMAGE_SIZE_KEYS = ("width", "height")


def _check_content_parts(content: Any, errors: dict[str, list[str]]) -> None:
    """Image parts may give their size; when they do it must be a positive whole number
    (the token estimate is made from it)."""
    if not isinstance(content, list):
        return
    for index, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in IMAGE_PART_TYPES:
            continue
        image = part.get("image_url")
        places = [part, image] if isinstance(image, dict) else [part]
        for place in places:
            for key in IMAGE_SIZE_KEYS:
                value = place.get(key)
                if value is None:
                    continue
                if not is_whole_number(value, minimum=1):
                    errors.setdefault("content", []).append(
                        f"Content part {index}: an image {key} is a whole number of pixels, "
                        f"1 or more, not {value!r:.40}."
                    )


def _check_tool_results(tool_results: Any, errors: dict[str, list[str]]) -> None:
    if tool_results is None:
        return
    if not isinstance(tool_results, list) or not all(isinstance(r, dict) for r in tool_results):
        errors.setdefault("tool_results", []).append("Tool results must be a list of objects.")


def validate_entry_fields(
    *,
    type: Any,
    role: Any,
    content: Any,
    name: Any,
    tool_call_id: Any,
    tool_calls: Any,
    tool_results: Any,
    event: Any,
    metadata: Any,
    token_count: Any,
    created_at: Any,
) -> None:
    """Raise ``InvalidEntry`` with every field error of a new entry, or return."""
    errors: dict[str, list[str]] = {}

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    if type not in KNOWN_TYPES:
        add("type", f"Unknown entry type {type!r}; expected one of {', '.join(KNOWN_TYPES)}.")
    if role is not None and role not in KNOWN_ROLES:
        add("role", f"Unknown role {role!r}; expected one of {', '.join(KNOWN_ROLES)}.")
    if content is not None and not isinstance(content, str | list):
        add("content", "Content must be a text or a list of content parts.")
    for field, value, label in (
        ("name", name, "A name"),
        ("tool_call_id", tool_call_id, "A tool call id"),
    ):
        if value is None:
            continue
        if not isinstance(value, str) or len(value) > 255:
            add(field, f"{label} is a text of at most 255 characters.")
        elif problem := text_problem(value):
            add(field, problem)
    _check_content_parts(content, errors)
    _check_tool_calls(tool_calls, errors)
    _check_tool_results(tool_results, errors)
    if metadata is not None and not isinstance(metadata, dict):
        add("metadata", "Metadata must be an object.")
    if token_count is not None and not is_whole_number(token_count, maximum=MAX_TOKEN_COUNT):
        add("token_count", f"A token count is a whole number from 0 to {MAX_TOKEN_COUNT}.")
    if created_at is not None and (
        not isinstance(created_at, datetime) or created_at.tzinfo is None
    ):
        add("created_at", "created_at must be a datetime with a time zone.")

    if type == EntryType.MESSAGE:
        if role is None:
            add("role", "A message needs a role.")
        if content is None and not tool_calls:
            add("content", "A message needs content or tool calls.")
    elif type == EntryType.TOOL_RESULT:
        if content is None and not tool_results:
            add("content", "A tool result needs content or tool results.")
    elif type in EVENT_TYPES and not isinstance(event, dict):
        add("event", f"A {type} entry is a session event and needs an event object.")
    if type in CONVERSATION_TYPES and event is not None:
        add("event", f"Only session events carry an event payload, not {type} entries.")

    for field, value in (
        ("content", content),
        ("tool_calls", tool_calls),
        ("tool_results", tool_results),
        ("event", event),
        ("metadata", metadata),
    ):
        problem = json_problem(value) if value is not None and field not in errors else None
        if problem:
            add(field, f"Must be JSON data: {problem}")
    if errors:
        raise InvalidEntry(errors)
