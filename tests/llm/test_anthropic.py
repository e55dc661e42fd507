"""The Anthropic client's requests and readings, against a loopback stub of the Messages
API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cogitator_memory.exceptions import InvalidInput, LLMError
from tests.llm.conftest import MakeClient
from tests.llm.stub import ModelStub, Reply


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    with ModelStub("anthropic") as running:
        yield running


def test_the_prompt_and_system_messages_go_to_the_system_parameter(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    client = make_client(stub, model="claude-test", api_key="ak-test")

    # when
    client(
        [
            {"role": "system", "content": "The user is vegetarian."},
            {"role": "user", "content": "Plan a day in Rome"},
            {"role": "assistant", "content": "Start at the Colosseum"},
            {"role": "user", "content": "And lunch?"},
        ],
        prompt="Summarize the conversation.",
        max_tokens=200,
    )

    # then
    [request] = stub.requests
    assert request.path == "/v1/messages"
    # SDK versions send the key as x-api-key or as a bearer token.
    sent = (request.headers.get("x-api-key"), request.headers.get("authorization"))
    assert sent in [("ak-test", None), (None, "Bearer ak-test")]
    assert request.body == {
        "model": "claude-test",
        "max_tokens": 200,
        "system": "Summarize the conversation.\n\nThe user is vegetarian.",
        "messages": [
            {"role": "user", "content": "Plan a day in Rome"},
            {"role": "assistant", "content": "Start at the Colosseum"},
            {"role": "user", "content": "And lunch?"},
        ],
    }


def test_without_a_prompt_no_system_parameter_is_sent(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    client = make_client(stub, max_tokens=64)

    # when
    client([{"role": "user", "content": "hi"}])

    # then
    assert stub.requests[0].body == {
        "model": "stub-model",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_only_system_messages_are_refused(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    client = make_client(stub)

    # when
    with pytest.raises(InvalidInput) as caught:
        client([{"role": "system", "content": "Be brief."}])

    # then
    assert caught.value.errors == {"messages": ["Give at least one user or assistant message."]}
    assert stub.requests == []


def test_text_blocks_are_joined_and_other_blocks_left_out(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    body = stub.body(None)
    body["content"] = [
        {"type": "thinking", "thinking": "Let me see.", "signature": "sig"},
        {"type": "text", "text": "Ana likes "},
        {"type": "text", "text": "aisle seats."},
    ]
    stub.script(Reply(json=body))
    client = make_client(stub)

    # when
    completion = client([{"role": "user", "content": "hi"}])

    # then
    assert completion.text == "Ana likes aisle seats."


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"content": [{"type": "text", "text": "x"}]}, "no 'stop_reason'"),
        ({"content": [{"type": "text"}], "stop_reason": "end_turn"}, "text block 0 has no 'text'"),
    ],
)
def test_a_message_without_what_it_needs_is_an_error(
    stub: ModelStub, make_client: MakeClient, body: dict, problem: str
) -> None:
    # given
    stub.script(Reply(json=body))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client([{"role": "user", "content": "hi"}])

    # then
    assert str(caught.value) == f"anthropic model call failed: malformed response: {problem}"


def test_an_overloaded_api_is_retried(stub: ModelStub, make_client: MakeClient) -> None:
    # given: Anthropic's own status for an overloaded API
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    stub.script(Reply(status=529, json=overloaded, headers={"retry-after-ms": "1"}))
    client = make_client(stub)

    # when
    completion = client([{"role": "user", "content": "hi"}])

    # then
    assert completion.text == "answer to: hi"
    assert len(stub.requests) == 2
