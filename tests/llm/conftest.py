"""Fixtures of the model clients' tests: a stub of each provider's wire format, and clients
aimed at it with retry waits too short to slow a test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cogitator_memory.llm.anthropic import AnthropicSummarizer
from cogitator_memory.llm.google import GoogleSummarizer
from cogitator_memory.llm.openai import OpenAISummarizer
from cogitator_memory.llm.sdk import SDKSummarizer
from tests.llm.stub import ModelStub

WIRES = ["openai", "anthropic", "google"]
CLASSES: dict[str, type[SDKSummarizer]] = {
    "openai": OpenAISummarizer,
    "anthropic": AnthropicSummarizer,
    "google": GoogleSummarizer,
}

MakeClient = Callable[..., SDKSummarizer]


@pytest.fixture(params=WIRES)
def stub(request: pytest.FixtureRequest) -> Iterator[ModelStub]:
    with ModelStub(request.param) as running:
        yield running


@pytest.fixture
def make_client() -> Iterator[MakeClient]:
    """Builds the client of a stub's wire aimed at it. Google's SDK takes its backoff as
    options; OpenAI's and Anthropic's wait what a scripted ``retry-after-ms`` asks."""
    made: list[SDKSummarizer] = []

    def make(stub: ModelStub, **options: Any) -> SDKSummarizer:
        options = {
            "model": "stub-model",
            "api_key": "test-key",
            "base_url": stub.base_url,
            "timeout": 5.0,
            "max_retries": 2,
            **options,
        }
        if stub.wire == "google":
            options = {"backoff": 0.001, "max_wait": 0.01, **options}
        client = CLASSES[stub.wire](**options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
