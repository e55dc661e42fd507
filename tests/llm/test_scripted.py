"""The scripted model: answers in order or by matcher, the calls it records, the error when
it runs out, and its JSON file of recorded answers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.exceptions import InvalidInput, LLMError, ScriptExhausted
from cogitator_memory.llm.protocol import Completion
from cogitator_memory.llm.scripted import ScriptedAnswer, ScriptedCall, ScriptedModel


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def test_answers_are_replayed_in_order() -> None:
    # given
    model = ScriptedModel(["first", ("second, cut", True), ScriptedAnswer("third")])

    # when
    answers = [model(ask(f"call {n}")) for n in range(3)]

    # then
    assert answers == [
        Completion(text="first", truncated=False, model="scripted"),
        Completion(text="second, cut", truncated=True, model="scripted"),
        Completion(text="third", truncated=False, model="scripted"),
    ]


def test_every_call_is_recorded_as_it_came() -> None:
    # given
    model = ScriptedModel(["a", "b"], model="recorded-model", max_tokens=300)

    # when
    model(ask("first question"), prompt="Summarize.")
    model(ask("second question"), model="other-model", max_tokens=20)

    # then
    assert model.calls == [
        ScriptedCall(
            messages=[{"role": "user", "content": "first question"}],
            model="recorded-model",
            prompt="Summarize.",
            max_tokens=300,
        ),
        ScriptedCall(
            messages=[{"role": "user", "content": "second question"}],
            model="other-model",
            prompt=None,
            max_tokens=20,
        ),
    ]


def test_running_out_of_answers_raises_naming_the_call() -> None:
    # given
    model = ScriptedModel(["only one"])
    model(ask("first"))

    # when
    with pytest.raises(ScriptExhausted) as caught:
        model(ask("What does Ana like?"))

    # then
    assert str(caught.value) == (
        "scripted model call failed: no scripted answer left for call 2 "
        "(its last message: 'What does Ana like?')"
    )
    assert isinstance(caught.value, LLMError)
    assert caught.value.call_number == 2
    assert len(model.calls) == 2


def test_a_matching_answer_goes_to_the_call_it_matches_before_the_ordered_ones() -> None:
    # given
    model = ScriptedModel(
        [
            "in order 1",
            ScriptedAnswer('[{"fact": "aisle seat"}]', match="Extract the facts"),
            ScriptedAnswer("Rome", match=re.compile(r"trip to \w+")),
            ScriptedAnswer("ana's", match=lambda call: call.prompt == "Name the user."),
            "in order 2",
        ]
    )

    # when
    answers = [
        model(ask("hello")).text,
        model(ask("a trip to Rome")).text,
        model(ask("Ana wants an aisle seat"), prompt="Extract the facts.").text,
        model(ask("hi"), prompt="Name the user.").text,
        model(ask("hello again")).text,
    ]

    # then
    assert answers == ["in order 1", "Rome", '[{"fact": "aisle seat"}]', "ana's", "in order 2"]
    assert model.remaining == 0


def test_a_matching_answer_is_never_given_to_a_call_it_does_not_match() -> None:
    # given
    model = ScriptedModel([ScriptedAnswer("summary", match="Summarize")])

    # when / then
    with pytest.raises(ScriptExhausted):
        model(ask("Extract the facts"))
    assert model(ask("Summarize this")).text == "summary"


def test_a_repeating_answer_answers_every_call_it_matches() -> None:
    # given
    model = ScriptedModel([ScriptedAnswer("[]", match="Extract", repeat=True), "other"])

    # when
    answers = [model(ask(text)).text for text in ["Extract 1", "Extract 2", "x", "Extract 3"]]

    # then
    assert answers == ["[]", "[]", "other", "[]"]


def test_answers_can_be_added_later() -> None:
    # given
    model = ScriptedModel()

    # when
    model.add("late answer")

    # then
    assert model(ask("hi")).text == "late answer"


@pytest.mark.parametrize(
    ("messages", "options", "field"),
    [
        ([{"role": "robot", "content": "hi"}], {}, "messages"),
        (ask("hi"), {"max_tokens": 0}, "max_tokens"),
        (ask("hi"), {"prompt": ["Summarize."]}, "prompt"),
        (ask("hi"), {"model": ""}, "model"),
    ],
)
def test_a_bad_call_is_refused_as_every_client_refuses_it(
    messages: Any, options: dict[str, Any], field: str
) -> None:
    # given
    model = ScriptedModel(["unused"])

    # when
    with pytest.raises(InvalidInput) as caught:
        model(messages, **options)

    # then
    assert list(caught.value.errors) == [field]
    assert model.calls == []
    assert model.remaining == 1


# The JSON file


def write(tmp_path: Path, payload: Any) -> Path:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def test_answers_load_from_a_json_file(tmp_path: Path) -> None:
    # given
    path = write(
        tmp_path,
        {
            "model": "gpt-recorded",
            "answers": [
                "plain",
                {
                    "text": "cut sh",
                    "truncated": True,
                    "usage": {"input_tokens": 9, "output_tokens": 4},
                },
                {"text": "[]", "match": "Extract", "repeat": True},
                {"text": "Rome", "pattern": "trip to \\w+"},
            ],
        },
    )

    # when
    model = ScriptedModel.from_file(path)
    answers = [
        model(ask("Extract facts")),
        model(ask("a trip to Rome")),
        model(ask("hello")),
        model(ask("Extract more")),
        model(ask("go on")),
    ]

    # then
    assert [a.text for a in answers] == ["[]", "Rome", "plain", "[]", "cut sh"]
    assert answers[4] == Completion(
        text="cut sh",
        truncated=True,
        model="gpt-recorded",
        usage={"input_tokens": 9, "output_tokens": 4},
    )


def test_a_bare_list_is_a_file_of_answers(tmp_path: Path) -> None:
    # given
    path = write(tmp_path, ["one", "two"])

    # when
    model = ScriptedModel(script=path, model="named")

    # then
    assert [model(ask("x")).text, model(ask("y")).text] == ["one", "two"]
    assert model.model == "named"


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"answers": "one"}, " must hold a list of answers, or an object with an 'answers' list."),
        ([3], ": answer 0 must be a string or an object."),
        ([{"text": "x", "truncate": True}], ": answer 0 has unknown keys ['truncate']"),
        (["ok", {"truncated": True}], ": answer 1 has no 'text' string."),
        ([{"text": "x", "repeat": "yes"}], ": answer 0 has a 'truncated' or 'repeat' that is not"),
        (
            [{"text": "x", "match": "a", "pattern": "b"}],
            ": answer 0 has both 'match' and 'pattern'.",
        ),
        ([{"text": "x", "match": ""}], ": answer 0 has a 'match' that is not a non-empty string."),
        (
            [{"text": "x", "pattern": "("}],
            ": answer 0 has a 'pattern' that is no regular expression",
        ),
        ([{"text": "x", "usage": {"tokens": 3}}], ": answer 0 has a 'usage' that is not"),
        ({"model": 3, "answers": []}, ": 'model' must be a string."),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_answer(
    tmp_path: Path, payload: Any, problem: str
) -> None:
    # given
    path = write(tmp_path, payload)

    # when
    with pytest.raises(ImproperlyConfigured) as caught:
        ScriptedModel.from_file(path)

    # then
    assert str(caught.value).startswith(f"The scripted model's answers file {str(path)!r}{problem}")


def test_a_file_that_is_not_json_or_missing_is_refused(tmp_path: Path) -> None:
    # given
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")

    # when
    with pytest.raises(ImproperlyConfigured) as not_json:
        ScriptedModel.from_file(broken)
    with pytest.raises(ImproperlyConfigured) as missing:
        ScriptedModel.from_file(tmp_path / "nowhere.json")

    # then
    assert str(not_json.value).startswith(
        f"The scripted model's answers file {str(broken)!r} cannot be read: JSONDecodeError: "
    )
    assert "FileNotFoundError" in str(missing.value)
