"""Token estimates: texts, images, content parts, tool calls, messages and entries."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings

from cogitator_memory.threads.models import Entry, EntryType
from cogitator_memory.tokens import (
    MESSAGE_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    count_content_tokens,
    count_entry_tokens,
    count_image_tokens,
    count_message_tokens,
    count_messages_tokens,
    count_tokens,
    count_tool_calls_tokens,
    truncate_to_tokens,
)

# A 1024 x 1024 image at high detail: scaled to 768 x 768, that is 2 x 2 tiles.
UNKNOWN_SIZE_IMAGE_TOKENS = 85 + 170 * 4


# --- count_tokens ----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", None])
def test_count_tokens_of_an_empty_text_is_zero(text: str | None) -> None:
    # given / when
    tokens = count_tokens(text)
    # then
    assert tokens == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a", 1), ("abcd", 1), ("abcde", 2), ("abcdefgh", 2), ("abcdefghi", 3), ("x" * 400, 100)],
)
def test_count_tokens_is_the_ceiling_of_a_quarter_of_the_length(text: str, expected: int) -> None:
    # given / when
    tokens = count_tokens(text)
    # then
    assert tokens == expected


def test_count_tokens_counts_characters_not_bytes() -> None:
    # given: four characters, twelve bytes in UTF-8
    text = "日本語!"
    # when
    tokens = count_tokens(text)
    # then
    assert tokens == 1


@override_settings(COGITATOR_MEMORY={"CHARS_PER_TOKEN": 2})
def test_count_tokens_uses_the_chars_per_token_setting() -> None:
    # given
    text = "abcde"
    # when
    tokens = count_tokens(text)
    # then: ceil(5 / 2)
    assert tokens == 3


@override_settings(COGITATOR_MEMORY={"CHARS_PER_TOKEN": 2.5})
def test_count_tokens_accepts_a_fractional_chars_per_token() -> None:
    # given
    text = "abcdef"
    # when
    tokens = count_tokens(text)
    # then: ceil(6 / 2.5)
    assert tokens == 3


def test_count_tokens_goes_back_to_the_default_after_an_override() -> None:
    # given
    with override_settings(COGITATOR_MEMORY={"CHARS_PER_TOKEN": 1}):
        assert count_tokens("abcdefgh") == 8
    # when
    tokens = count_tokens("abcdefgh")
    # then
    assert tokens == 2


# --- count_image_tokens ----------------------------------------------------------------


@pytest.mark.parametrize(("width", "height"), [(4096, 4096), (100, 100), (None, None)])
def test_a_low_detail_image_costs_85_tokens_whatever_its_size(
    width: int | None, height: int | None
) -> None:
    # given / when
    tokens = count_image_tokens(width, height, detail="low")
    # then
    assert tokens == 85


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        # Small images are not scaled up: one tile.
        (100, 100, 85 + 170 * 1),
        (512, 512, 85 + 170 * 1),
        # One pixel over a tile makes a second column of tiles.
        (513, 512, 85 + 170 * 2),
        # 1024 x 1024 -> short side to 768: 768 x 768, 2 x 2 tiles.
        (1024, 1024, 85 + 170 * 4),
        # 2048 x 4096 -> fit 2048: 1024 x 2048 -> short side 768: 768 x 1536, 2 x 3 tiles.
        (2048, 4096, 85 + 170 * 6),
        # 1920 x 1080 -> short side 768: 1365.3 x 768, 3 x 2 tiles.
        (1920, 1080, 85 + 170 * 6),
        # 4096 x 1024 -> fit 2048: 2048 x 512, short side under 768 so kept: 4 x 1 tiles.
        (4096, 1024, 85 + 170 * 4),
        # 8000 x 100 -> fit 2048: 2048 x 25.6: 4 x 1 tiles.
        (8000, 100, 85 + 170 * 4),
    ],
)
def test_an_image_costs_85_plus_170_per_tile_after_scaling(
    width: int, height: int, expected: int
) -> None:
    # given / when
    tokens = count_image_tokens(width, height)
    # then
    assert tokens == expected


def test_high_detail_counts_tiles_like_the_default() -> None:
    # given / when
    tokens = count_image_tokens(2048, 4096, detail="high")
    # then
    assert tokens == 85 + 170 * 6


@pytest.mark.parametrize(("width", "height"), [(None, None), (800, None), (None, 800), (0, 0)])
def test_an_image_of_unknown_size_counts_as_1024_square(
    width: int | None, height: int | None
) -> None:
    # given / when
    tokens = count_image_tokens(width, height)
    # then
    assert tokens == UNKNOWN_SIZE_IMAGE_TOKENS


# --- content parts ---------------------------------------------------------------------


def test_content_of_none_costs_nothing() -> None:
    # given / when
    tokens = count_content_tokens(None)
    # then
    assert tokens == 0


def test_text_content_is_counted_as_text() -> None:
    # given / when
    tokens = count_content_tokens("abcdefgh")
    # then
    assert tokens == 2


def test_text_parts_are_counted_by_their_text_only() -> None:
    # given
    parts = [{"type": "text", "text": "abcd"}, {"type": "text", "text": "abcdefghi"}]
    # when
    tokens = count_content_tokens(parts)
    # then: 1 + 3, the "type" keys cost nothing
    assert tokens == 4


def test_a_part_with_text_and_no_type_is_a_text_part() -> None:
    # given
    parts = [{"text": "abcdefgh"}]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == 2


def test_plain_strings_in_a_part_list_are_texts() -> None:
    # given
    parts = ["abcd", "abcde"]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == 1 + 2


def test_an_image_url_part_uses_its_detail() -> None:
    # given
    parts = [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}
    ]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == 85


def test_an_image_url_part_uses_its_size() -> None:
    # given
    parts = [
        {
            "type": "image_url",
            "image_url": {"url": "https://example.com/a.png", "width": 2048, "height": 4096},
        }
    ]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == 85 + 170 * 6


def test_an_image_url_part_without_size_or_detail_counts_as_unknown_size() -> None:
    # given
    parts = [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == UNKNOWN_SIZE_IMAGE_TOKENS


def test_an_image_part_with_detail_on_the_part_itself_is_counted() -> None:
    # given
    parts = [{"type": "image", "image": "aGVsbG8=", "detail": "low"}]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == 85


def test_an_image_url_does_not_count_as_text() -> None:
    # given: a data URL far longer than the image's estimate
    url = "data:image/png;base64," + "A" * 40_000
    parts = [{"type": "image_url", "image_url": {"url": url, "detail": "low"}}]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == 85


def test_parts_of_unknown_kinds_are_counted_by_their_json() -> None:
    # given
    part = {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}}
    # when
    tokens = count_content_tokens([part])
    # then
    assert tokens == count_tokens(json.dumps(part))


def test_text_image_and_unknown_parts_add_up() -> None:
    # given
    audio = {"type": "file", "file_id": "file-123"}
    parts = [
        {"type": "text", "text": "abcdefgh"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
        audio,
    ]
    # when
    tokens = count_content_tokens(parts)
    # then
    assert tokens == 2 + 85 + count_tokens(json.dumps(audio))


# --- count_tool_calls_tokens -----------------------------------------------------------


@pytest.mark.parametrize("tool_calls", [None, []])
def test_no_tool_calls_cost_nothing(tool_calls: list[dict[str, Any]] | None) -> None:
    # given / when
    tokens = count_tool_calls_tokens(tool_calls)
    # then
    assert tokens == 0


def test_a_tool_call_costs_its_name_and_json_arguments() -> None:
    # given: '{"q": "rome"}' is 13 characters
    calls = [{"id": "call_1", "name": "search", "arguments": {"q": "rome"}}]
    # when
    tokens = count_tool_calls_tokens(calls)
    # then: "search" 2 + arguments 4
    assert tokens == TOOL_CALL_OVERHEAD + 2 + 4


def test_arguments_already_in_json_are_counted_as_they_are() -> None:
    # given: 12 characters
    calls = [{"id": "call_1", "name": "search", "arguments": '{"q":"rome"}'}]
    # when
    tokens = count_tool_calls_tokens(calls)
    # then
    assert tokens == TOOL_CALL_OVERHEAD + 2 + 3


def test_an_openai_style_function_wrapper_is_read() -> None:
    # given
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"q":"rome"}'},
        }
    ]
    # when
    tokens = count_tool_calls_tokens(calls)
    # then: the same as the flat form, the wrapper keys cost nothing
    assert tokens == TOOL_CALL_OVERHEAD + 2 + 3


def test_a_tool_call_without_arguments_costs_its_name() -> None:
    # given
    calls = [{"id": "call_1", "name": "get_time"}]
    # when
    tokens = count_tool_calls_tokens(calls)
    # then
    assert tokens == TOOL_CALL_OVERHEAD + 2


def test_several_tool_calls_add_up() -> None:
    # given
    calls: list[dict[str, Any]] = [
        {"id": "call_1", "name": "search", "arguments": {"q": "rome"}},
        {"id": "call_2", "name": "get_time"},
    ]
    # when
    tokens = count_tool_calls_tokens(calls)
    # then
    assert tokens == (TOOL_CALL_OVERHEAD + 2 + 4) + (TOOL_CALL_OVERHEAD + 2)


# --- count_message_tokens / count_messages_tokens --------------------------------------


def test_a_message_costs_its_content_plus_the_overhead() -> None:
    # given
    message = {"role": "user", "content": "abcdefgh"}
    # when
    tokens = count_message_tokens(message)
    # then
    assert tokens == MESSAGE_OVERHEAD + 2


def test_a_message_without_content_costs_the_overhead() -> None:
    # given
    message = {"role": "assistant", "content": None}
    # when
    tokens = count_message_tokens(message)
    # then
    assert tokens == MESSAGE_OVERHEAD


def test_a_message_name_is_counted() -> None:
    # given
    message = {"role": "user", "name": "alice", "content": "abcd"}
    # when
    tokens = count_message_tokens(message)
    # then: "alice" 2 + "abcd" 1
    assert tokens == MESSAGE_OVERHEAD + 2 + 1


@pytest.mark.parametrize("key", ["tool_calls", "toolCalls"])
def test_a_message_counts_its_tool_calls(key: str) -> None:
    # given
    calls = [{"id": "call_1", "name": "search", "arguments": {"q": "rome"}}]
    message = {"role": "assistant", "content": "", key: calls}
    # when
    tokens = count_message_tokens(message)
    # then
    assert tokens == MESSAGE_OVERHEAD + count_tool_calls_tokens(calls)


def test_a_message_with_content_parts_counts_each_part() -> None:
    # given
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "abcd"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        ],
    }
    # when
    tokens = count_message_tokens(message)
    # then
    assert tokens == MESSAGE_OVERHEAD + 1 + UNKNOWN_SIZE_IMAGE_TOKENS


def test_a_list_of_messages_costs_the_sum_with_one_overhead_each() -> None:
    # given
    messages = [
        {"role": "system", "content": "abcd"},
        {"role": "user", "content": "abcdefgh"},
        {"role": "assistant", "content": "abcdefghi"},
    ]
    # when
    tokens = count_messages_tokens(messages)
    # then
    assert tokens == 3 * MESSAGE_OVERHEAD + 1 + 2 + 3


def test_no_messages_cost_nothing() -> None:
    # given / when
    tokens = count_messages_tokens([])
    # then
    assert tokens == 0


# --- count_entry_tokens ----------------------------------------------------------------


def test_an_entry_costs_its_text_plus_the_overhead() -> None:
    # given
    entry = Entry(role="user", content="abcdefgh")
    # when
    tokens = count_entry_tokens(entry)
    # then
    assert tokens == MESSAGE_OVERHEAD + 2


def test_count_entry_tokens_ignores_the_saved_token_count() -> None:
    # given
    entry = Entry(role="user", content="abcdefgh", token_count=999)
    # when
    tokens = count_entry_tokens(entry)
    # then
    assert tokens == MESSAGE_OVERHEAD + 2


def test_an_entry_counts_its_tool_calls() -> None:
    # given
    calls = [{"id": "call_1", "name": "search", "arguments": {"q": "rome"}}]
    entry = Entry(role="assistant", content="abcd", tool_calls=calls)
    # when
    tokens = count_entry_tokens(entry)
    # then
    assert tokens == MESSAGE_OVERHEAD + 1 + (TOOL_CALL_OVERHEAD + 2 + 4)


def test_an_entry_counts_its_tool_results_text_and_json() -> None:
    # given: '{"hits": 3}' is 11 characters
    entry = Entry(
        type=EntryType.TOOL_RESULT,
        role="tool",
        tool_results=[
            {"callId": "call_1", "name": "search", "result": "abcdefgh"},
            {"callId": "call_2", "name": "count", "result": {"hits": 3}},
        ],
    )
    # when
    tokens = count_entry_tokens(entry)
    # then
    assert tokens == MESSAGE_OVERHEAD + (TOOL_CALL_OVERHEAD + 2) + (TOOL_CALL_OVERHEAD + 3)


def test_an_entry_counts_the_error_of_a_tool_result() -> None:
    # given
    entry = Entry(
        type=EntryType.TOOL_RESULT,
        role="tool",
        tool_results=[{"callId": "call_1", "result": "abcd", "error": "timed out"}],
    )
    # when
    tokens = count_entry_tokens(entry)
    # then: "abcd" 1 + "timed out" 3
    assert tokens == MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + 1 + 3


def test_an_entry_counts_its_images() -> None:
    # given
    entry = Entry(
        role="user",
        content=[
            {"type": "text", "text": "abcd"},
            {"type": "image_url", "image_url": {"url": "https://e.com/a.png", "detail": "low"}},
        ],
    )
    # when
    tokens = count_entry_tokens(entry)
    # then
    assert tokens == MESSAGE_OVERHEAD + 1 + 85


def test_an_entry_counts_its_name() -> None:
    # given
    entry = Entry(role="user", name="alice", content="abcd")
    # when
    tokens = count_entry_tokens(entry)
    # then
    assert tokens == MESSAGE_OVERHEAD + 2 + 1


def test_an_event_entry_counts_its_payload_as_json() -> None:
    # given
    event = {"label": "checkpoint"}
    entry = Entry(type=EntryType.LABEL, event=event)
    # when
    tokens = count_entry_tokens(entry)
    # then
    assert tokens == MESSAGE_OVERHEAD + count_tokens(json.dumps(event))


# --- truncate_to_tokens ----------------------------------------------------------------


def test_a_text_that_fits_is_returned_whole() -> None:
    # given
    text = "abcdefgh"
    # when
    truncated = truncate_to_tokens(text, 2)
    # then
    assert truncated == text


def test_a_text_that_does_not_fit_is_cut_to_the_budget() -> None:
    # given
    text = "abcdefghij"
    # when
    truncated = truncate_to_tokens(text, 2)
    # then
    assert truncated == "abcdefgh"
    assert count_tokens(truncated) == 2


@pytest.mark.parametrize("max_tokens", [0, -5])
def test_a_budget_of_zero_or_less_gives_an_empty_text(max_tokens: int) -> None:
    # given / when
    truncated = truncate_to_tokens("abcdefgh", max_tokens)
    # then
    assert truncated == ""


@override_settings(COGITATOR_MEMORY={"CHARS_PER_TOKEN": 2})
def test_truncate_to_tokens_uses_the_chars_per_token_setting() -> None:
    # given
    text = "abcdefghij"
    # when
    truncated = truncate_to_tokens(text, 3)
    # then
    assert truncated == "abcdef"


@override_settings(COGITATOR_MEMORY={"CHARS_PER_TOKEN": 2.5})
def test_a_truncated_text_fits_its_budget_with_a_fractional_setting() -> None:
    # given
    text = "x" * 50
    # when
    truncated = truncate_to_tokens(text, 3)
    # then: 7 characters, ceil(7 / 2.5) = 3
    assert truncated == "x" * 7
    assert count_tokens(truncated) <= 3
