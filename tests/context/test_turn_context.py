"""The ``<memory_context>`` block: formatted, extended, taken off the input."""

from __future__ import annotations

from cogitator_memory.context.turn_context import (
    extend_turn_context,
    format_turn_context,
    without_turn_context,
)


def test_format_turn_context_joins_texts_in_one_block() -> None:
    assert format_turn_context(["Known facts:\n- Ana is vegan", "", "  ", "Brief."]) == (
        "<memory_context>\nKnown facts:\n- Ana is vegan\n\nBrief.\n</memory_context>"
    )
    assert format_turn_context([]) == ""
    assert format_turn_context(["", " \n"]) == ""


def test_extend_turn_context_adds_to_the_block_or_puts_one_in_front() -> None:
    text = format_turn_context(["Brief."]) + "\n\nWhat now?"
    assert extend_turn_context(text, "Insight: be short.") == (
        "<memory_context>\nBrief.\n\nInsight: be short.\n</memory_context>\n\nWhat now?"
    )
    assert extend_turn_context("What now?", "Brief.") == (
        "<memory_context>\nBrief.\n</memory_context>\n\nWhat now?"
    )
    assert extend_turn_context("", "Brief.") == "<memory_context>\nBrief.\n</memory_context>"
    assert extend_turn_context("What now?", "  ") == "What now?"


def test_without_turn_context_gives_the_input_back() -> None:
    text = extend_turn_context("What changed since yesterday?", "Known facts:\n- x")
    assert without_turn_context(text) == "What changed since yesterday?"
    assert without_turn_context(format_turn_context(["a"])) == ""
    # a block in the middle of a text is the text's own
    middle = "Look: <memory_context>\nx\n</memory_context>"
    assert without_turn_context(middle) == middle
    assert without_turn_context("plain") == "plain"
