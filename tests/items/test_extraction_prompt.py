"""Reading the extraction model's answer: the array wherever it stands, elements that fit."""

from __future__ import annotations

import json

import pytest

from cogitator_memory.items.extraction_prompt import ExtractedQuote, parse_extraction

LISBON = {
    "kind": "fact",
    "subject": "Ana",
    "attribute": "Home City",
    "value": "Lisbon",
    "statement": "Ana lives in Lisbon.",
    "confidence": 0.9,
    "when": "since May",
    "quotes": [{"message": 2, "text": "I live in Lisbon"}],
}
SEAT = {"kind": "preference", "subject": "Ana", "attribute": "seat", "value": "aisle"}


def test_a_plain_array_is_read() -> None:
    parsed = parse_extraction(json.dumps([LISBON, SEAT]))
    assert (parsed.found_array, parsed.complete) == (True, True)
    first, second = parsed.items
    assert (first.attribute, first.when, first.quotes) == (
        "home city",
        "since May",
        (ExtractedQuote(2, "I live in Lisbon"),),
    )
    assert (second.value, second.confidence, second.when, second.quotes) == ("aisle", 0.5, None, ())


@pytest.mark.parametrize(
    "wrapped",
    [
        "Here is what I found:\n{array}\nHope this helps.",
        "```json\n{array}\n```",
        "In message [2] Ana says where she lives: {array}",
        "[3] is small talk. {array}",
    ],
)
def test_the_array_is_found_past_text_and_brackets(wrapped: str) -> None:
    parsed = parse_extraction(wrapped.format(array=json.dumps([LISBON])))
    assert [item.value for item in parsed.items] == ["Lisbon"]


def test_null_or_blank_fields_are_absent_and_an_element_missing_one_it_needs_is_dropped() -> None:
    answer = json.dumps(
        [
            {**LISBON, "when": None, "statement": "  "},
            {**SEAT, "value": ""},
            {**SEAT, "kind": "rumour"},
            {**SEAT, "subject": None},
            "just text",
            {**SEAT, "confidence": "high", "quotes": [{"message": "2", "text": "x"}, "y"]},
        ]
    )
    parsed = parse_extraction(answer)
    assert len(parsed.items) == 2
    assert (parsed.items[0].when, parsed.items[0].statement) == (None, "")
    assert (parsed.items[1].confidence, parsed.items[1].quotes) == (0.5, ())


def test_an_element_that_is_not_json_is_left_out_not_the_answer() -> None:
    answer = "[" + json.dumps(LISBON) + ', {"kind": fact, oops}, ' + json.dumps(SEAT) + "]"
    parsed = parse_extraction(answer)
    assert [item.value for item in parsed.items] == ["Lisbon", "aisle"]
    assert parsed.complete


def test_a_cut_answer_keeps_the_elements_it_finished() -> None:
    answer = "[" + json.dumps(LISBON) + ", " + json.dumps(SEAT)[:25]
    parsed = parse_extraction(answer)
    assert [item.value for item in parsed.items] == ["Lisbon"]
    assert (parsed.found_array, parsed.complete) == (True, False)


@pytest.mark.parametrize("answer", ["", "Nothing here.", "{}", "[3] and [4]", None, 42])
def test_an_answer_without_an_array_says_so(answer) -> None:
    parsed = parse_extraction(answer)
    assert (parsed.items, parsed.found_array) == ([], False)


def test_an_empty_array_is_an_answer() -> None:
    parsed = parse_extraction("Nothing worth keeping: []")
    assert (parsed.items, parsed.found_array, parsed.complete) == ([], True, True)


def test_claims_beyond_the_shape_are_never_read() -> None:
    [item] = parse_extraction(
        json.dumps([{**LISBON, "trust": "system", "status": "active", "id": "item_x"}])
    ).items
    assert not hasattr(item, "trust") and not hasattr(item, "status")
