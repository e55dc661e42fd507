"""What every SDK client does, against a loopback stub of its provider's wire format:
answers, cut answers, retries, timeouts, errors, bad bodies, settings and missing SDKs."""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from cogitator_memory.exceptions import InvalidInput, LLMError
from cogitator_memory.llm.protocol import Completion
from tests.llm.conftest import CLASSES, MakeClient
from tests.llm.stub import QUICK_RETRY, ModelStub, Reply

HELLO = [{"role": "user", "content": "hello"}]

# Each provider's error body, whose message a client should quote.
ERROR_BODIES: dict[str, dict[str, Any]] = {
    "openai": {"error": {"message": "overloaded", "type": "server_error"}},
    "anthropic": {"type": "error", "error": {"type": "api_error", "message": "overloaded"}},
    "google": {"error": {"code": 500, "message": "overloaded", "status": "INTERNAL"}},
}
# What each client says of an answer without its main field.
MISSING_FIELD: dict[str, str] = {
    "openai": "no 'choices'",
    "anthropic": "no 'content' list",
    "google": "no 'candidates'",
}


# Answers


def test_an_answer_comes_back_as_a_completion(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    client = make_client(stub)

    # when
    completion = client(HELLO)

    # then
    assert completion == Completion(
        text="answer to: hello",
        truncated=False,
        model="stub-model",
        usage={"input_tokens": 11, "output_tokens": 7},
    )
    assert len(stub.requests) == 1


def test_an_answer_cut_at_the_token_limit_is_truncated(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    stub.script(Reply(json=stub.body("The first half of a long sum", truncated=True)))
    client = make_client(stub)

    # when
    completion = client(HELLO, max_tokens=8)

    # then
    assert completion.text == "The first half of a long sum"
    assert completion.truncated is True


def test_an_answer_without_usage_has_none(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    stub.script(Reply(json=stub.body("short", usage=None)))
    client = make_client(stub)

    # when
    completion = client(HELLO)

    # then
    assert (completion.text, completion.usage) == ("short", None)


def test_the_model_of_the_call_wins_over_the_configured_one(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    client = make_client(stub, model="configured-model")

    # when
    completion = client(HELLO, model="asked-model")
    default = client(HELLO)

    # then
    assert (completion.model, default.model) == ("asked-model", "configured-model")


# Retries


def test_429_is_retried_then_the_answer_comes_back(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    stub.script(Reply(status=429, json=ERROR_BODIES[stub.wire], headers=QUICK_RETRY))
    client = make_client(stub)

    # when
    completion = client(HELLO)

    # then
    assert completion.text == "answer to: hello"
    assert len(stub.requests) == 2
    assert stub.requests[0].body == stub.requests[1].body


def test_500_is_retried_then_fails_naming_provider_and_status(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    stub.script(*[Reply(status=500, json=ERROR_BODIES[stub.wire], headers=QUICK_RETRY)] * 3)
    client = make_client(stub, max_retries=2)

    # when
    with pytest.raises(LLMError) as caught:
        client(HELLO)

    # then
    assert str(caught.value) == f"{stub.wire} model call failed (HTTP 500): overloaded"
    assert (caught.value.provider, caught.value.status) == (stub.wire, 500)
    assert len(stub.requests) == 3


def test_400_is_not_retried(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    body = {"error": {"code": 400, "message": "max_tokens is too large", "type": "invalid"}}
    stub.script(Reply(status=400, json=body))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client(HELLO)

    # then
    assert str(caught.value) == f"{stub.wire} model call failed (HTTP 400): max_tokens is too large"
    assert caught.value.status == 400
    assert len(stub.requests) == 1


def test_an_error_body_that_is_not_json_is_quoted(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    stub.script(Reply(status=401, raw=b"Unauthorized by proxy"))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client(HELLO)

    # then
    assert caught.value.status == 401
    assert str(caught.value).startswith(f"{stub.wire} model call failed (HTTP 401): ")
    assert "Unauthorized by proxy" in str(caught.value)


def test_a_timeout_fails_naming_the_server_and_the_wait(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given: the answer comes after the client stopped waiting
    stub.script(Reply(delay=3.0))
    client = make_client(stub, timeout=0.3, max_retries=0)

    # when
    with pytest.raises(LLMError) as caught:
        client(HELLO)

    # then
    assert str(caught.value) == (
        f"{stub.wire} model call failed: no answer from {stub.base_url} within 0.3s (1 attempt)"
    )
    assert caught.value.status is None


def test_a_timeout_is_retried_then_the_answer_comes_back(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    stub.script(Reply(delay=3.0))
    client = make_client(stub, timeout=0.3, max_retries=1)

    # when
    completion = client(HELLO)

    # then
    assert completion.text == "answer to: hello"
    assert len(stub.requests) == 2


def test_an_unreachable_server_fails_naming_it(make_client: MakeClient, stub: ModelStub) -> None:
    # given: a loopback port nothing listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = make_client(stub, base_url=f"http://127.0.0.1:{port}", max_retries=0)

    # when
    with pytest.raises(LLMError) as caught:
        client(HELLO)

    # then
    assert str(caught.value).startswith(
        f"{stub.wire} model call failed: could not reach http://127.0.0.1:{port}: "
    )
    assert stub.requests == []


# Bad bodies


def test_a_body_that_is_not_json_is_an_error_and_not_retried(
    stub: ModelStub, make_client: MakeClient
) -> None:
    # given
    stub.script(Reply(raw=b"<html>a login page</html>"))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client(HELLO)

    # then
    assert str(caught.value) == (
        f"{stub.wire} model call failed: malformed response: the body is not JSON: "
        "'<html>a login page</html>'"
    )
    assert caught.value.status is None
    assert len(stub.requests) == 1


def test_a_body_without_the_answer_is_an_error(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    stub.script(Reply(json={"id": "x"}))
    client = make_client(stub)

    # when
    with pytest.raises(LLMError) as caught:
        client(HELLO)

    # then
    assert str(caught.value) == (
        f"{stub.wire} model call failed: malformed response: {MISSING_FIELD[stub.wire]}"
    )


# Calls refused before any request


@pytest.mark.parametrize(
    ("messages", "options", "field"),
    [
        ([], {}, "messages"),
        ("hello", {}, "messages"),
        ([{"role": "tool", "content": "x"}], {}, "messages"),
        ([{"role": "user", "content": ["x"]}], {}, "messages"),
        (HELLO, {"max_tokens": 0}, "max_tokens"),
        (HELLO, {"prompt": 3}, "prompt"),
        (HELLO, {"model": ""}, "model"),
    ],
)
def test_a_bad_call_is_refused_before_any_request(
    stub: ModelStub,
    make_client: MakeClient,
    messages: Any,
    options: dict[str, Any],
    field: str,
) -> None:
    # given
    client = make_client(stub)

    # when
    with pytest.raises(InvalidInput) as caught:
        client(messages, **options)

    # then
    assert list(caught.value.errors) == [field]
    assert stub.requests == []


# Construction


@pytest.mark.parametrize("wire", ["openai", "anthropic", "google"])
def test_a_client_needs_a_model(wire: str) -> None:
    # when / then
    with pytest.raises(ImproperlyConfigured) as caught:
        CLASSES[wire](api_key="k")
    assert str(caught.value) == (
        f"The {wire} model provider needs COGITATOR_MEMORY['LLM']['MODEL'] (the model to ask)."
    )


@pytest.mark.parametrize("wire", ["openai", "anthropic", "google"])
def test_the_providers_own_endpoint_needs_a_key(wire: str) -> None:
    # when / then
    with pytest.raises(ImproperlyConfigured) as caught:
        CLASSES[wire](model="m")
    assert str(caught.value) == (
        f"The {wire} model provider needs COGITATOR_MEMORY['LLM']['API_KEY'] for its own endpoint."
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "['TIMEOUT'] must be a number greater than 0, got 0."),
        ({"timeout": True}, "['TIMEOUT'] must be a number greater than 0, got True."),
        ({"max_retries": -1}, "['MAX_RETRIES'] must be a whole number of 0 or more, got -1."),
        ({"max_tokens": 0}, "['MAX_TOKENS'] must be a whole number of 1 or more, got 0."),
    ],
)
def test_bad_settings_are_refused_at_construction(options: dict[str, Any], message: str) -> None:
    # when / then
    with pytest.raises(ImproperlyConfigured) as caught:
        CLASSES["openai"](model="m", api_key="k", **options)
    assert str(caught.value) == f"COGITATOR_MEMORY['LLM']{message}"


@pytest.mark.parametrize(
    ("wire", "module", "package", "extra"),
    [
        ("openai", "openai", "openai", "openai"),
        ("anthropic", "anthropic", "anthropic", "anthropic"),
        ("google", "google.genai", "google-genai", "google"),
    ],
)
def test_a_missing_sdk_names_the_package_and_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, wire: str, module: str, package: str, extra: str
) -> None:
    # given: the SDK cannot be imported
    monkeypatch.setitem(sys.modules, module, None)

    # when
    with pytest.raises(ImproperlyConfigured) as caught:
        CLASSES[wire](model="m", api_key="k")

    # then
    message = str(caught.value)
    assert message.startswith(
        f"The {wire} model provider needs the {package!r} package (ModuleNotFoundError: "
    )
    assert message.endswith(f"install it with pip install 'cogitator-memory[{extra}]'.")


def test_importing_the_clients_imports_no_sdk() -> None:
    # when: a fresh interpreter imports the seam and every client module
    code = (
        "import sys\n"
        "import cogitator_memory.llm.registry, cogitator_memory.llm.openai\n"
        "import cogitator_memory.llm.anthropic, cogitator_memory.llm.google\n"
        "import cogitator_memory.llm.scripted\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'google.genai') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )

    # then
    assert result.stdout.strip() == "[]"


def test_each_process_builds_its_own_sdk_client(stub: ModelStub, make_client: MakeClient) -> None:
    # given
    client = make_client(stub)
    first = client.sdk_client()

    # when: the same process asks again, then a forked child (another pid) does
    again = client.sdk_client()
    client._client_pid = -1
    in_child = client.sdk_client()

    # then
    assert again is first
    assert in_child is not first
