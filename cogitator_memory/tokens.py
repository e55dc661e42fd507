"""Token estimates without a tokenizer.

A text costs ``ceil(len / CHARS_PER_TOKEN)`` tokens (4 characters a token by default, a
fair estimate for English), a message adds a fixed overhead for its role and framing,
tool calls are counted by their name and JSON arguments, and an image by the tile rule
vision models bill by (85 tokens at low detail; otherwise 85 plus 170 per 512-pixel tile
of the image scaled to fit 2048 and then 768 on its short side). An image of unknown
size counts as a 1024 x 1024 one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cogitator_memory.conf import memory_settings

if TYPE_CHECKING:
    from cogitator_memory.threads.models import Entry

MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 3
IMAGE_LOW_DETAIL_TOKENS = 85
IMAGE_TILE_TOKENS = 170
UNKNOWN_IMAGE_SIZE = (1024, 1024)

__all__ = [
    "count_content_tokens",
    "count_entry_tokens",
    "count_image_tokens",
    "count_message_tokens",
    "count_messages_tokens",
    "count_tokens",
    "count_tool_calls_tokens",
    "truncate_to_tokens",
]


def _chars_per_token() -> float:
    return float(memory_settings.CHARS_PER_TOKEN)


def count_tokens(text: str | None) -> int:
    """Estimated tokens of a text; 0 for an empty text or None."""
    if not text:
        return 0
    return math.ceil(len(text) / _chars_per_token())


def count_image_tokens(
    width: int | None = None, height: int | None = None, *, detail: str | None = None
) -> int:
    """Estimated tokens of one image, by the tile rule of vision models."""
    if detail == "low":
        return IMAGE_LOW_DETAIL_TOKENS
    if not width or not height or width < 0 or height < 0:
        width, height = UNKNOWN_IMAGE_SIZE
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return IMAGE_LOW_DETAIL_TOKENS + IMAGE_TILE_TOKENS * tiles


def _part_tokens(part: Any) -> int:
    if isinstance(part, str):
        return count_tokens(part)
    if not isinstance(part, Mapping):
        return count_tokens(json.dumps(part, default=str))
    kind = part.get("type")
    if kind == "text" or (kind is None and "text" in part):
        return count_tokens(str(part.get("text") or ""))
    if kind in {"image", "image_url", "input_image"}:
        image = part.get("image_url") if isinstance(part.get("image_url"), Mapping) else part
        assert isinstance(image, Mapping)
        return count_image_tokens(
            _as_int(image.get("width", part.get("width"))),
            _as_int(image.get("height", part.get("height"))),
            detail=image.get("detail", part.get("detail")),
        )
    # Parts of other kinds (audio, files, provider-specific) are counted by their JSON.
    return count_tokens(json.dumps(part, default=str, sort_keys=True))


def _as_int(value: Any) -> int | None:
    """A size in pixels: a positive whole number, or None (unknown) for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        size = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return size if size > 0 else None


def count_content_tokens(content: Any) -> int:
    """Estimated tokens of message content: a text or a list of parts."""
    if content is None:
        return 0
    if isinstance(content, str):
        return count_tokens(content)
    if isinstance(content, list):
        return sum(_part_tokens(part) for part in content)
    return _part_tokens(content)


def count_tool_calls_tokens(tool_calls: Iterable[Mapping[str, Any]] | None) -> int:
    """Estimated tokens of tool calls: each call's name and its arguments as JSON."""
    total = 0
    for call in tool_calls or ():
        function = call.get("function") if isinstance(call.get("function"), Mapping) else call
        assert isinstance(function, Mapping)
        arguments = function.get("arguments", call.get("arguments"))
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, default=str) if arguments is not None else ""
        name = str(function.get("name") or call.get("name") or "")
        total += TOOL_CALL_OVERHEAD + count_tokens(name) + count_tokens(arguments)
    return total


def _tool_results_tokens(tool_results: Iterable[Mapping[str, Any]] | None) -> int:
    total = 0
    for result in tool_results or ():
        value = result.get("result", result.get("content"))
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        error = result.get("error")
        total += TOOL_CALL_OVERHEAD + count_tokens(text) + count_tokens(str(error or ""))
    return total


def count_message_tokens(message: Mapping[str, Any]) -> int:
    """Estimated tokens of one chat message (``role``, ``content``, ``name``,
    ``tool_calls``), with the per-message overhead."""
    tool_calls = message.get("tool_calls", message.get("toolCalls"))
    return (
        MESSAGE_OVERHEAD
        + count_content_tokens(message.get("content"))
        + count_tokens(message.get("name") or "")
        + count_tool_calls_tokens(tool_calls)
    )


def count_messages_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Estimated tokens of a list of chat messages."""
    return sum(count_message_tokens(message) for message in messages)


def count_entry_fields_tokens(
    *,
    content: Any = None,
    name: str | None = None,
    tool_calls: Iterable[Mapping[str, Any]] | None = None,
    tool_results: Iterable[Mapping[str, Any]] | None = None,
    event: Any = None,
) -> int:
    """Estimated tokens of an entry from its fields, before the entry exists."""
    total = (
        MESSAGE_OVERHEAD
        + count_content_tokens(content)
        + count_tokens(name or "")
        + count_tool_calls_tokens(tool_calls)
        + _tool_results_tokens(tool_results)
    )
    if event is not None and content is None:
        total += count_tokens(json.dumps(event, default=str, sort_keys=True))
    return total


def count_entry_tokens(entry: Entry) -> int:
    """Estimated tokens of a stored entry: its text, tool call arguments, tool results
    and images, whatever its saved ``token_count`` says."""
    return count_entry_fields_tokens(
        content=entry.content,
        name=entry.name,
        tool_calls=entry.tool_calls,
        tool_results=entry.tool_results,
        event=entry.event,
    )


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that fits ``max_tokens``; the text itself if it fits."""
    if max_tokens <= 0:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    return text[: int(max_tokens * _chars_per_token())]
