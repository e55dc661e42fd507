"""Which nodes a text names: a node's name or an alias as whole words of the text, case
and punctuation aside. Matched by word sequences in one pass over the text, so the cost
grows with the text and the names, never with their product.

These functions hold no state and touch no database.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["MAX_NAME_WORDS", "named_in"]

# The longest name (in words) looked for in a text.
MAX_NAME_WORDS = 8

_WORD = re.compile(r"\w+")


def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.casefold()))


def named_in(text: str, nodes: Iterable[tuple[str, str, Sequence[str] | None]]) -> list[str]:
    """The ids of the ``nodes`` (id, name, aliases) ``text`` names, in the order it first
    names them."""
    by_words: dict[tuple[str, ...], list[str]] = {}
    longest = 0
    for node_id, name, aliases in nodes:
        for label in [name, *[alias for alias in aliases or [] if isinstance(alias, str)]]:
            words = _words(label)
            if words and len(words) <= MAX_NAME_WORDS:
                by_words.setdefault(words, []).append(node_id)
                longest = max(longest, len(words))
    said = _words(text)
    found: dict[str, None] = {}
    for start in range(len(said)):
        for size in range(1, min(longest, len(said) - start) + 1):
            for node_id in by_words.get(said[start : start + size], ()):
                found.setdefault(node_id)
    return list(found)
