"""The seam's types: the answer, and the checks every client runs on a call."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cogitator_memory.exceptions import InvalidInput
from cogitator_memory.llm.protocol import Completion, checked_max_tokens, checked_messages


def test_a_completion_cannot_be_changed() -> None:
    # given
    completion = Completion(text="Ana likes aisle seats.", truncated=False, model="m")

    # when / then
    with pytest.raises(dataclasses.FrozenInstanceError):
        completion.text = "something else"  # type: ignore[misc]
    assert completion.usage is None


def test_checked_messages_are_copies() -> None:
    # given
    messages: list[Any] = [{"role": "user", "content": "hi"}]

    # when
    checked = checked_messages(messages)
    messages[0]["content"] = "changed afterwards"

    # then
    assert checked == [{"role": "user", "content": "hi"}]


def test_a_tuple_of_messages_is_accepted() -> None:
    # when
    checked = checked_messages(({"role": "system", "content": "Be brief."},))

    # then
    assert checked == [{"role": "system", "content": "Be brief."}]


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        (None, "Give a list of {'role', 'content'} messages."),
        ("hello", "Give a list of {'role', 'content'} messages."),
        ({"role": "user", "content": "hi"}, "Give a list of {'role', 'content'} messages."),
        ([], "Give at least one message."),
        (["hi"], "Message 0 must be a dict with 'role' and 'content' only."),
        (
            [{"role": "user", "content": "hi", "name": "ana"}],
            "Message 0 must be a dict with 'role' and 'content' only.",
        ),
        (
            [{"role": "user", "content": "hi"}, {"role": "tool", "content": "42"}],
            "Message 1 has role 'tool', not one of system, user, assistant.",
        ),
        (
            [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "Message 0 has content of type list, not str.",
        ),
    ],
)
def test_bad_messages_are_refused_naming_the_first_bad_one(messages: Any, problem: str) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        checked_messages(messages)

    # then
    assert caught.value.errors == {"messages": [problem]}


@pytest.mark.parametrize("value", [0, -5, 1.5, "100", True, None])
def test_a_budget_that_is_not_a_whole_number_of_one_or_more_is_refused(value: Any) -> None:
    # when
    with pytest.raises(InvalidInput) as caught:
        checked_max_tokens(value)

    # then
    assert caught.value.errors == {
        "max_tokens": [f"Must be a whole number of 1 or more, not {value!r}."]
    }


def test_a_budget_of_one_or_more_passes() -> None:
    # then
    assert (checked_max_tokens(1), checked_max_tokens(4096)) == (1, 4096)
