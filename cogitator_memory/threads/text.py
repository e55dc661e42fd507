"""The text an entry holds: what its quotes are checked against and what it is found by."""

from __future__ import annotations

import json
from typing import Any

from cogitator_memory.threads.models import CONVERSATION_TYPES, Entry

__all__ = ["content_text", "entry_text"]

# Content parts that carry text, as chat and response APIs name them.
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") in TEXT_PART_TYPES:
        text = part.get("text")
        return text if isinstance(text, str) else ""
    # Images, audio and files have no text.
    return ""


def content_text(content: Any) -> str:
    """The text of message content: a text, or the text parts of a list, one per line."""
    if isinstance(content, list):
        return "\n".join(text for text in (_part_text(part) for part in content) if text.strip())
    return _part_text(content)


def _tool_results_text(tool_results: list[Any] | None) -> str:
    texts = []
    for result in tool_results or ():
        if not isinstance(result, dict):
            continue
        value = result.get("result", result.get("content", result.get("error")))
        if value is None:
            continue
        texts.append(value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    return "\n".join(text for text in texts if text.strip())


def entry_text(entry: Entry) -> str:
    """The text of a message or tool result: its text content, or, for a tool result
    without text content, the results of its tools. Empty for session events."""
    if entry.type not in CONVERSATION_TYPES:
        return ""
    text = content_text(entry.content)
    if not text.strip():
        text = _tool_results_text(entry.tool_results)
    return text.strip()
