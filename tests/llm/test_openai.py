"""The OpenAI client's requests and readings, against a loopback stub of chat completions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cogitator_memory.exceptions import LLMError
from cogitator_memory.llm.openai import OPENAI_BASE_URL, OpenAISummarizer
from tests.llm.conftest import MakeClient
from tests.llm.stub import ModelStub, Reply


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub("openai") as running:
        yield running


def test_the_prompt_goes_first_as_a_system_message(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    client = make_client(stub, model="gpt-test", api_key="sk-test")
    messages = [
        {"role": "user", "content": "Plan a day in Rome"},
        {"role": "assistant", "content": "Start at the Colosseum"},
        {"role": "system", "content": "The user is vegetarian."},
        {"role": "user", "content": "And lunch?"},
    ]

    # when
    client(messages, prompt="Summarize the conversation.", max_tokens=200)

    # then
    [request] = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "Summarize the conversation."}, *messages],
        "max_tokens": 200,
    }


def test_the_configured_budget_is_sent_when_the_call_gives_none(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    client = make_client(stub, max_tokens=321)

    # when
    client([{"role": "user", "content": "hi"}])

    # then
    assert stub.requests[0].body["max_tokens"] == 321


def test_openai_itself_is_sent_max_completion_tokens() -> None:
    # given: the client aimed at OpenAI's own endpoint (no request is made)
    client = OpenAISummarizer(model="gpt-test", api_key="sk-test")

    # then
    assert client.base_url == OPENAI_BASE_URL
    assert client.is_own_endpoint is True


def test_a_compatible_server_needs_no_key(stub: ModelStub, make_client: MakeClient) -> None:
    # given: Ollama, vLLM or llama.cpp at BASE_URL
    client = make_client(stub, api_key=None)

    # when
    completion = client([{"role": "user", "content": "hi"}])

    # then
    assert completion.text == "answer to: hi"
    assert stub.requests[0].headers["authorization"] == "Bearer no-key"


def test_a_refusal_is_an_error(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    body = stub.body(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    stub.script(Reply(json=body))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client([{"role": "user", "content": "hi"}])

    # then
    assert (
        str(caught.value) == "openai model call failed: the model refused: I can't help with that."
    )


def test_an_answer_cut_before_any_text_is_empty_and_truncated(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given: a reasoning model spent the whole budget thinking
    stub.script(Reply(json=stub.body(None, truncated=True)))
    client = make_client(stub)

    # when
    completion = client([{"role": "user", "content": "hi"}])

    # then
    assert (completion.text, completion.truncated) == ("", True)


@pytest.mark.parametrize(
    ("choice", "problem"),
    [
        (
            {"index": 0, "finish_reason": "stop"},
            "the first choice has no 'message' or no 'finish_reason'",
        ),
        (
            {"index": 0, "message": {"role": "assistant", "content": "x"}},
            "the first choice has no 'message' or no 'finish_reason'",
        ),
        (
            {"index": 0, "message": {"content": 5}, "finish_reason": "stop"},
            "the answer's content is int, not text",
        ),
    ],
)
def test_a_choice_without_what_it_needs_is_an_error(
    stub: ModelStub, make_client: MakeClient, choice: dict, problem: str
) -> None:
    # given
    stub.script(Reply(json={"choices": [choice]}))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client([{"role": "user", "content": "hi"}])

    # then
    assert str(caught.value) == f"openai model call failed: malformed response: {problem}"
