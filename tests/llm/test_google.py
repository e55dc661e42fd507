"""The Google client's requests and readings, against a loopback stub of the Gemini API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cogitator_memory.exceptions import LLMError
from tests.llm.conftest import MakeClient
from tests.llm.stub import ModelStub, Reply


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub("google") as running:
        yield running


def test_turns_become_contents_and_the_prompt_a_system_instruction(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    client = make_client(stub, model="gemini-test", api_key="goog-key")

    # when
    client(
        [
            {"role": "user", "content": "Plan a day in Rome"},
            {"role": "assistant", "content": "Start at the Colosseum"},
            {"role": "system", "content": "The user is vegetarian."},
            {"role": "user", "content": "And lunch?"},
        ],
        prompt="Summarize the conversation.",
        max_tokens=200,
    )

    # then
    [request] = stub.requests
    assert request.path.endswith("/models/gemini-test:generateContent")
    assert request.headers["x-goog-api-key"] == "goog-key"
    assert request.query == {}
    assert request.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "Plan a day in Rome"}]},
            {"role": "model", "parts": [{"text": "Start at the Colosseum"}]},
            {"role": "user", "parts": [{"text": "And lunch?"}]},
        ],
        "systemInstruction": {
            "role": "user",
            "parts": [{"text": "Summarize the conversation.\n\nThe user is vegetarian."}],
        },
        "generationConfig": {"maxOutputTokens": 200},
    }


def test_thoughts_are_left_out_of_the_text(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    body = stub.body(None)
    body["candidates"][0]["content"]["parts"] = [
        {"text": "Considering the dates.", "thought": True},
        {"text": "Rome in May."},
    ]
    stub.script(Reply(json=body))
    client = make_client(stub)

    # when
    completion = client([{"role": "user", "content": "hi"}])

    # then
    assert completion.text == "Rome in May."


def test_a_blocked_prompt_is_an_error_saying_why(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    stub.script(Reply(json={"promptFeedback": {"blockReason": "SAFETY"}}))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client([{"role": "user", "content": "hi"}])

    # then
    assert str(caught.value) == "google model call failed: the prompt was blocked (SAFETY)"


@pytest.mark.parametrize(
    ("candidate", "problem"),
    [
        ({"content": {"parts": [{"text": "x"}]}}, "the first candidate has no 'finishReason'"),
        ({"content": {"parts": [{"text": 3}]}, "finishReason": "STOP"}, "ValidationError: "),
    ],
)
def test_a_candidate_without_what_it_needs_is_an_error(
    stub: ModelStub, make_client: MakeClient, candidate: dict, problem: str
) -> None:
    # given
    stub.script(Reply(json={"candidates": [candidate]}))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client([{"role": "user", "content": "hi"}])

    # then
    assert str(caught.value).startswith(f"google model call failed: malformed response: {problem}")


def test_retries_wait_the_configured_backoff_with_the_sdks_own_settings(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    client = make_client(stub, max_retries=3, backoff=0.25, max_wait=4.0, timeout=2.5)

    # when
    options = client.sdk_client()._api_client._http_options

    # then
    assert options.retry_options.attempts == 4
    assert (options.retry_options.initial_delay, options.retry_options.max_delay) == (0.25, 4.0)
    assert options.timeout == 2500
