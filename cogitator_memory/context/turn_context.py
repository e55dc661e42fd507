"""The turn's memory context: one ``<memory_context>`` block sent with the input.

What changes every turn (the brief, known facts, relevant context, graph context, recalled
turns and items) goes after the history, in one user message, so the system message and the
history stay a stable prefix for the prompt cache. A caller that adds the input itself sends
the block in front of the input as one user message::

    format_turn_context(["Known facts:\\n- Ana is vegan"])
    # '<memory_context>\\nKnown facts:\\n- Ana is vegan\\n</memory_context>'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from cogitator_memory.tokens import MESSAGE_OVERHEAD, count_tokens

if TYPE_CHECKING:
    from cogitator_memory.context.assembler import ContextBlock

__all__ = [
    "CLOSE_TAG",
    "EARLIER_IN_CONVERSATION",
    "FROM_MEMORY",
    "GRAPH_CONTEXT",
    "KNOWN_FACTS",
    "OBSERVATIONS",
    "OPEN_TAG",
    "RELEVANT_CONTEXT",
    "TURN_SECTIONS",
    "extend_turn_context",
    "format_turn_context",
    "framing_tokens",
    "heading",
    "line_tokens",
    "section_group",
    "section_tokens",
    "turn_groups",
    "turn_message_tokens",
    "without_turn_context",
]

OPEN_TAG = "<memory_context>"
CLOSE_TAG = "</memory_context>"
BLOCK_SEPARATOR = "\n\n"
KNOWN_FACTS = "Known facts:"
OBSERVATIONS = "Observations:"
RELEVANT_CONTEXT = "Relevant context:"
GRAPH_CONTEXT = "Graph context:"
EARLIER_IN_CONVERSATION = "Earlier in this conversation:"
FROM_MEMORY = "From memory:"
# The sections of the turn's memory context, in the order they are sent (after the brief).
TURN_SECTIONS = (
    KNOWN_FACTS,
    OBSERVATIONS,
    RELEVANT_CONTEXT,
    GRAPH_CONTEXT,
    EARLIER_IN_CONVERSATION,
    FROM_MEMORY,
)
# The framing groups of blocks (``ContextBlock.groups``): a message, a section.
SYSTEM_GROUP = "message:system"
TURN_GROUP = "message:turn"
SECTION_PREFIX = "section:"
# Between the parts of the system message.
PART_SEPARATOR = "\n\n"

# A block at the very start of a text, and the blank lines after it.
_LEADING_BLOCK = re.compile(
    rf"\A\s*{re.escape(OPEN_TAG)}\n?(?P<body>.*?)\n?{re.escape(CLOSE_TAG)}[ \t]*(?:\r?\n)*",
    re.DOTALL,
)


def format_turn_context(blocks: Iterable[str]) -> str:
    """The ``<memory_context>`` block of these texts, one blank line apart; empty when no
    text has anything but spaces."""
    kept = [block.strip("\n") for block in blocks if block and block.strip()]
    if not kept:
        return ""
    return f"{OPEN_TAG}\n{BLOCK_SEPARATOR.join(kept)}\n{CLOSE_TAG}"


def extend_turn_context(text: str, block: str) -> str:
    """``text`` with ``block`` added to the ``<memory_context>`` block it starts with (as
    the last text in it), or with a new block in front when it has none."""
    if not block or not block.strip():
        return text
    match = _LEADING_BLOCK.match(text or "")
    if match is None:
        context = format_turn_context([block])
        return f"{context}{BLOCK_SEPARATOR}{text}" if text else context
    body = match.group("body")
    rest = text[match.end() :]
    context = format_turn_context([body, block])
    return f"{context}{BLOCK_SEPARATOR}{rest}" if rest else context


def without_turn_context(text: str) -> str:
    """``text`` without the ``<memory_context>`` block it starts with: the input as the
    caller gave it."""
    match = _LEADING_BLOCK.match(text or "")
    return text if match is None else text[match.end() :]


def line_tokens(line: str) -> int:
    """What one line of a section costs, with its line break."""
    return count_tokens(line + "\n")


def section_tokens(heading: str) -> int:
    """What a section's heading costs, with the blank line before the next section."""
    return count_tokens(heading + "\n" + BLOCK_SEPARATOR)


def turn_message_tokens() -> int:
    """What the turn's user message costs besides its sections: the message and the tags."""
    return MESSAGE_OVERHEAD + count_tokens(f"{OPEN_TAG}\n\n{CLOSE_TAG}")


def section_group(heading: str) -> str:
    """The framing group of a section of the turn's memory context."""
    return SECTION_PREFIX + heading


def turn_groups(heading: str) -> tuple[str, str]:
    """The groups of a line under ``heading``: the turn's message and the section."""
    return (TURN_GROUP, section_group(heading))


def heading(block: ContextBlock) -> str | None:
    """The section a block is listed under, or None."""
    for group in block.groups:
        if group.startswith(SECTION_PREFIX):
            return group.removeprefix(SECTION_PREFIX)
    return None


def framing_tokens() -> dict[str, int]:
    """What each framing group costs, paid once by its first kept block."""
    costs = {SYSTEM_GROUP: MESSAGE_OVERHEAD, TURN_GROUP: turn_message_tokens()}
    costs.update({section_group(name): section_tokens(name) for name in TURN_SECTIONS})
    return costs
