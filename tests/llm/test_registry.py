"""``get_summarizer()``: the client COGITATOR_MEMORY["LLM"] names, cached per settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from cogitator_memory.exceptions import LLMUnavailable
from cogitator_memory.llm.anthropic import AnthropicSummarizer
from cogitator_memory.llm.google import GoogleSummarizer
from cogitator_memory.llm.openai import OpenAISummarizer
from cogitator_memory.llm.registry import get_summarizer, require_summarizer
from cogitator_memory.llm.scripted import ScriptedModel
from cogitator_memory.llm.sdk import SDKSummarizer
from tests.llm.stub import ModelStub


class RecordingSummarizer:
    """A provider of a project's own, named by its dotted path."""

    provider = "mine"

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.model = options.get("model", "mine")


def test_no_provider_means_no_model_and_model_backed_work_is_off() -> None:
    # when
    with override_settings(COGITATOR_MEMORY={"LLM": {"PROVIDER": None}}):
        summarizer = get_summarizer()
        with pytest.raises(LLMUnavailable) as caught:
            require_summarizer("Memory extraction")

    # then
    assert summarizer is None
    assert str(caught.value) == (
        "Memory extraction is off: no model is configured "
        "(set COGITATOR_MEMORY['LLM']['PROVIDER'] and MODEL)."
    )


@pytest.mark.parametrize(
    ("provider", "client_class"),
    [
        ("openai", OpenAISummarizer),
        ("anthropic", AnthropicSummarizer),
        ("google", GoogleSummarizer),
    ],
)
def test_settings_build_each_sdk_client(provider: str, client_class: type[SDKSummarizer]) -> None:
    # given
    llm = {
        "PROVIDER": provider,
        "MODEL": "some-model",
        "API_KEY": "key",
        "BASE_URL": "http://127.0.0.1:9/v1/",
        "TIMEOUT": 5.0,
        "MAX_RETRIES": 3,
        "MAX_TOKENS": 256,
    }

    # when
    with override_settings(COGITATOR_MEMORY={"LLM": llm}):
        summarizer = get_summarizer()

    # then
    assert isinstance(summarizer, client_class)
    assert (summarizer.provider, summarizer.model, summarizer.api_key) == (
        provider,
        "some-model",
        "key",
    )
    assert summarizer.base_url == "http://127.0.0.1:9/v1"
    assert (summarizer.timeout, summarizer.max_retries, summarizer.max_tokens) == (5.0, 3, 256)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_sdk_client_gets_the_timeout_and_retries(provider: str) -> None:
    # given
    llm = {"PROVIDER": provider, "MODEL": "m", "API_KEY": "k", "TIMEOUT": 7.5, "MAX_RETRIES": 4}

    # when
    with override_settings(COGITATOR_MEMORY={"LLM": llm}):
        summarizer = get_summarizer()
        assert isinstance(summarizer, SDKSummarizer)
        sdk_client = summarizer.sdk_client()

    # then
    assert (sdk_client.timeout, sdk_client.max_retries) == (7.5, 4)


def test_the_summarizer_is_built_once_and_again_when_settings_change() -> None:
    # given
    llm = {"PROVIDER": "scripted"}

    # when
    with override_settings(COGITATOR_MEMORY={"LLM": llm}):
        first, again = get_summarizer(), get_summarizer()
    with override_settings(COGITATOR_MEMORY={"LLM": {**llm, "MODEL": "other"}}):
        changed = get_summarizer()

    # then
    assert first is again
    assert isinstance(changed, ScriptedModel)
    assert changed is not first
    assert changed.model == "other"


def test_the_scripted_provider_replays_the_script_of_the_settings(tmp_path: Path) -> None:
    # given
    script = tmp_path / "demo.json"
    script.write_text(json.dumps({"model": "recorded", "answers": ["Ana likes aisle seats."]}))
    llm = {"PROVIDER": "scripted", "SCRIPT": str(script), "MAX_TOKENS": 99}

    # when
    with override_settings(COGITATOR_MEMORY={"LLM": llm}):
        summarizer = require_summarizer()
        completion = summarizer([{"role": "user", "content": "What does Ana like?"}])

    # then
    assert isinstance(summarizer, ScriptedModel)
    assert (completion.text, completion.model) == ("Ana likes aisle seats.", "recorded")
    assert summarizer.calls[0].max_tokens == 99


def test_a_dotted_path_is_built_with_the_keys_that_are_set() -> None:
    # given
    llm = {"PROVIDER": "tests.llm.test_registry.RecordingSummarizer", "MODEL": "mine-1"}

    # when
    with override_settings(COGITATOR_MEMORY={"LLM": llm}):
        summarizer = get_summarizer()

    # then
    assert isinstance(summarizer, RecordingSummarizer)
    assert summarizer.options == {
        "model": "mine-1",
        "timeout": 60.0,
        "max_retries": 2,
        "max_tokens": 1024,
    }


def test_a_client_that_refuses_its_settings_raises_improperly_configured() -> None:
    # when / then
    with (
        override_settings(COGITATOR_MEMORY={"LLM": {"PROVIDER": "openai", "API_KEY": "k"}}),
        pytest.raises(ImproperlyConfigured, match=r"needs COGITATOR_MEMORY\['LLM'\]\['MODEL'\]"),
    ):
        get_summarizer()


def test_a_summarizer_from_settings_answers_through_the_configured_server() -> None:
    # given
    with ModelStub("openai") as stub:
        llm = {"PROVIDER": "openai", "MODEL": "llama3.2", "BASE_URL": stub.base_url}

        # when
        with override_settings(COGITATOR_MEMORY={"LLM": llm}):
            completion = require_summarizer()([{"role": "user", "content": "hi"}])

    # then
    assert (completion.text, completion.model) == ("answer to: hi", "llama3.2")
    assert stub.requests[0].body["model"] == "llama3.2"
