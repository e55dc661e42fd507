"""The HTTP embedding providers against a loopback stub of each provider's wire format:
requests, batching, retries, timeouts, errors and settings."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from cogitator_memory.embeddings.providers.google import GoogleEmbeddings
from cogitator_memory.embeddings.providers.http import (
    HTTPEmbeddingService,
    backoff_seconds,
    retry_after_seconds,
)
from cogitator_memory.embeddings.providers.local import LocalEmbeddings
from cogitator_memory.embeddings.providers.ollama import OllamaEmbeddings
from cogitator_memory.embeddings.providers.openai import OpenAIEmbeddings
from cogitator_memory.embeddings.services import get_embedding_service
from cogitator_memory.exceptions import EmbeddingServiceError
from tests.embeddings.http_stub import DEFAULT_DIMENSIONS, EmbeddingStub, Reply, fake_vector

WIRES = ["openai", "ollama", "google"]
CLASSES: dict[str, type[HTTPEmbeddingService]] = {
    "openai": OpenAIEmbeddings,
    "ollama": OllamaEmbeddings,
    "google": GoogleEmbeddings,
}
# Each provider's error body for a refused request, and the words a client should quote.
ERROR_BODIES: dict[str, tuple[dict[str, Any], str]] = {
    "openai": (
        {"error": {"message": "Invalid 'input': empty string.", "type": "invalid_request_error"}},
        "Invalid 'input': empty string.",
    ),
    "ollama": (
        {"error": 'model "nomic-embed-text" not found, try pulling it first'},
        'model "nomic-embed-text" not found, try pulling it first',
    ),
    "google": (
        {"error": {"code": 400, "message": "Invalid JSON payload.", "status": "INVALID_ARGUMENT"}},
        "Invalid JSON payload.",
    ),
}

MakeService = Callable[..., HTTPEmbeddingService]


@pytest.fixture(params=WIRES)
def stub(request: pytest.FixtureRequest) -> Iterator[EmbeddingStub]:
    with EmbeddingStub(request.param) as running:
        yield running


@pytest.fixture
def make_service() -> Iterator[MakeService]:
    """Builds a provider aimed at a stub, with waits too short to slow a test."""
    made: list[HTTPEmbeddingService] = []

    def make(stub: EmbeddingStub, **options: Any) -> HTTPEmbeddingService:
        options = {
            "api_key": "test-key",
            "base_url": stub.base_url,
            "backoff": 0.001,
            "max_wait": 1.0,
            **options,
        }
        service = CLASSES[stub.wire](**options)
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


def texts(count: int) -> list[str]:
    return [f"text number {index}" for index in range(count)]


# Wire formats


def test_openai_posts_model_and_inputs_with_a_bearer_key(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("openai") as stub:
        service = make_service(stub, model="text-embedding-3-large", api_key="sk-test")

        # when
        vectors = service.embed(["alpha", "beta"])

    # then
    [request] = stub.requests
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.body == {"model": "text-embedding-3-large", "input": ["alpha", "beta"]}
    assert vectors == [fake_vector("alpha"), fake_vector("beta")]


def test_openai_orders_vectors_by_index_not_by_position(make_service: MakeService) -> None:
    # given: the answer lists data[1] before data[0]
    with EmbeddingStub("openai") as stub:
        stub.script(
            Reply(
                json={
                    "data": [
                        {"index": 1, "embedding": [0.0, 1.0]},
                        {"index": 0, "embedding": [1.0, 0.0]},
                    ]
                }
            )
        )
        service = make_service(stub)

        # when
        vectors = service.embed(["first", "second"])

    # then
    assert vectors == [[1.0, 0.0], [0.0, 1.0]]


def test_openai_sends_dimensions_only_when_configured(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("openai") as stub:
        shortened = make_service(stub, dimensions=4)
        native = make_service(stub)

        # when
        short_vectors = shortened.embed(["alpha"])
        native.embed(["alpha"])
        native.embed(["beta"])

    # then
    assert stub.requests[0].body["dimensions"] == 4
    assert short_vectors == [fake_vector("alpha", 4)]
    assert "dimensions" not in stub.requests[1].body
    assert "dimensions" not in stub.requests[2].body


def test_openai_compatible_server_needs_no_key(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("openai") as stub:
        service = make_service(stub, api_key=None)

        # when
        vectors = service.embed(["alpha"])

    # then
    assert vectors == [fake_vector("alpha")]
    assert "authorization" not in stub.requests[0].headers


def test_ollama_posts_model_and_inputs_to_api_embed(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("ollama") as stub:
        service = make_service(stub, model="mxbai-embed-large", api_key=None)

        # when
        vectors = service.embed(["alpha", "beta"])

    # then
    [request] = stub.requests
    assert request.path == "/api/embed"
    assert request.body == {"model": "mxbai-embed-large", "input": ["alpha", "beta"]}
    assert "authorization" not in request.headers
    assert vectors == [fake_vector("alpha"), fake_vector("beta")]


def test_ollama_sends_a_configured_key_as_a_bearer_token(make_service: MakeService) -> None:
    # given: Ollama behind an authenticating proxy
    with EmbeddingStub("ollama") as stub:
        service = make_service(stub, api_key="proxy-token", dimensions=4)

        # when
        vectors = service.embed(["alpha"])

    # then
    assert stub.requests[0].headers["authorization"] == "Bearer proxy-token"
    assert stub.requests[0].body["dimensions"] == 4
    assert vectors == [fake_vector("alpha", 4)]


def test_google_posts_one_request_per_text_with_the_key_in_a_header(
    make_service: MakeService,
) -> None:
    # given
    with EmbeddingStub("google") as stub:
        service = make_service(stub, model="gemini-embedding-001", api_key="goog-key")

        # when
        vectors = service.embed(["alpha", "beta"])

    # then
    [request] = stub.requests
    assert request.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert request.headers["x-goog-api-key"] == "goog-key"
    assert request.query == {}
    assert request.body == {
        "requests": [
            {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "alpha"}]}},
            {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "beta"}]}},
        ]
    }
    assert vectors == [fake_vector("alpha"), fake_vector("beta")]


def test_google_sends_dimensions_as_output_dimensionality(make_service: MakeService) -> None:
    # given: the model named with its "models/" prefix
    with EmbeddingStub("google") as stub:
        service = make_service(stub, model="models/text-embedding-004", dimensions=4)

        # when
        vectors = service.embed(["alpha"])

    # then
    [request] = stub.requests
    assert request.path == "/v1beta/models/text-embedding-004:batchEmbedContents"
    assert request.body["requests"][0]["model"] == "models/text-embedding-004"
    assert request.body["requests"][0]["outputDimensionality"] == 4
    assert vectors == [fake_vector("alpha", 4)]


# Batching


def test_texts_are_sent_in_batches_and_vectors_come_back_in_order(
    stub: EmbeddingStub, make_service: MakeService
) -> None:
    # given
    service = make_service(stub, batch_size=64)
    inputs = texts(150)

    # when
    vectors = service.embed(inputs)

    # then
    assert [stub.texts_of(request) for request in stub.requests] == [
        inputs[:64],
        inputs[64:128],
        inputs[128:],
    ]
    assert vectors == [fake_vector(text) for text in inputs]


def test_google_batches_are_capped_at_its_limit_of_100(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("google") as stub:
        service = make_service(stub, batch_size=500)

        # when
        vectors = service.embed(texts(250))

    # then
    assert [len(stub.texts_of(request)) for request in stub.requests] == [100, 100, 50]
    assert len(vectors) == 250


def test_no_texts_make_no_request(stub: EmbeddingStub, make_service: MakeService) -> None:
    # given
    service = make_service(stub)

    # when
    vectors = service.embed([])

    # then
    assert vectors == []
    assert stub.requests == []


def test_one_string_is_refused_rather_than_embedded_letter_by_letter(
    stub: EmbeddingStub, make_service: MakeService
) -> None:
    # given
    service = make_service(stub)

    # when / then
    with pytest.raises(TypeError, match="takes a sequence of texts, not one string"):
        service.embed("hello")
    assert stub.requests == []


def test_dimensions_are_learnt_from_the_first_answer(
    stub: EmbeddingStub, make_service: MakeService
) -> None:
    # given
    service = make_service(stub)
    assert service.dimensions is None

    # when
    service.embed(["alpha"])

    # then
    assert service.dimensions == DEFAULT_DIMENSIONS


# Retries


def test_429_with_retry_after_is_retried_then_succeeds(
    stub: EmbeddingStub, make_service: MakeService
) -> None:
    # given
    stub.script(Reply(status=429, json={"error": "slow down"}, headers={"Retry-After": "0"}))
    service = make_service(stub)

    # when
    vectors = service.embed(["alpha", "beta"])

    # then
    assert vectors == [fake_vector("alpha"), fake_vector("beta")]
    assert len(stub.requests) == 2
    assert stub.requests[0].body == stub.requests[1].body


def test_500_is_retried_then_succeeds(stub: EmbeddingStub, make_service: MakeService) -> None:
    # given
    stub.script(Reply(status=500, json={"error": "internal"}))
    service = make_service(stub)

    # when
    vectors = service.embed(["alpha"])

    # then
    assert vectors == [fake_vector("alpha")]
    assert len(stub.requests) == 2


def test_a_timeout_is_retried_then_succeeds(stub: EmbeddingStub, make_service: MakeService) -> None:
    # given: the first answer comes after the client stopped waiting
    stub.script(Reply(delay=2.0))
    service = make_service(stub, timeout=0.3)

    # when
    vectors = service.embed(["alpha"])

    # then
    assert vectors == [fake_vector("alpha")]
    assert len(stub.requests) == 2


def test_retries_used_up_raise_an_error_naming_provider_and_status(
    stub: EmbeddingStub, make_service: MakeService
) -> None:
    # given
    stub.script(*[Reply(status=503, json={"error": {"message": "overloaded"}})] * 3)
    service = make_service(stub, max_retries=2)

    # when
    with pytest.raises(EmbeddingServiceError) as caught:
        service.embed(["alpha"])

    # then
    assert str(caught.value) == (
        f"{stub.wire} embeddings failed (HTTP 503): overloaded (gave up after 3 attempts)"
    )
    assert caught.value.provider == stub.wire
    assert caught.value.status == 503
    assert len(stub.requests) == 3


def test_timeouts_used_up_raise_an_error_saying_so(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("ollama") as stub:
        stub.script(Reply(delay=2.0), Reply(delay=2.0))
        service = make_service(stub, timeout=0.2, max_retries=1)

        # when
        with pytest.raises(EmbeddingServiceError) as caught:
            service.embed(["alpha"])

    # then
    assert str(caught.value) == (
        f"ollama embeddings failed: no answer from {stub.root}/api/embed within 0.2s "
        "(gave up after 2 attempts)"
    )
    assert caught.value.status is None


def test_an_unreachable_server_is_retried_then_reported(make_service: MakeService) -> None:
    # given: a loopback port nothing listens on
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    service = OllamaEmbeddings(base_url=f"http://127.0.0.1:{port}", max_retries=1, backoff=0.001)
    waits: list[float] = []
    service.client.sleep = waits.append

    # when
    with pytest.raises(EmbeddingServiceError) as caught:
        service.embed(["alpha"])

    # then
    assert str(caught.value).startswith(
        f"ollama embeddings failed: could not reach http://127.0.0.1:{port}/api/embed: "
    )
    assert str(caught.value).endswith("(gave up after 2 attempts)")
    assert len(waits) == 1
    service.close()


def test_400_is_not_retried_and_quotes_the_providers_message(
    stub: EmbeddingStub, make_service: MakeService
) -> None:
    # given
    body, words = ERROR_BODIES[stub.wire]
    stub.script(Reply(status=400, json=body))
    service = make_service(stub)

    # when
    with pytest.raises(EmbeddingServiceError) as caught:
        service.embed(["alpha"])

    # then
    assert str(caught.value) == f"{stub.wire} embeddings failed (HTTP 400): {words}"
    assert caught.value.status == 400
    assert len(stub.requests) == 1


def test_an_error_body_that_is_not_json_is_quoted_as_text(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("openai") as stub:
        stub.script(Reply(status=401, raw=b"Unauthorized by proxy"))
        service = make_service(stub)

        # when
        with pytest.raises(EmbeddingServiceError) as caught:
            service.embed(["alpha"])

    # then
    assert str(caught.value) == "openai embeddings failed (HTTP 401): Unauthorized by proxy"


def test_retry_after_is_waited_exactly(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("openai") as stub:
        stub.script(
            Reply(status=429, json={}, headers={"Retry-After": "0.75"}),
            Reply(status=429, json={}, headers={"retry-after-ms": "250"}),
        )
        service = make_service(stub, max_wait=5.0)
        waits: list[float] = []
        service.client.sleep = waits.append

        # when
        service.embed(["alpha"])

    # then
    assert waits == [0.75, 0.25]


def test_a_retry_after_longer_than_max_wait_fails_at_once(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("google") as stub:
        stub.script(
            Reply(status=429, json={"error": {"message": "quota"}}, headers={"Retry-After": "120"})
        )
        service = make_service(stub, max_wait=30.0)

        # when
        with pytest.raises(EmbeddingServiceError) as caught:
            service.embed(["alpha"])

    # then
    assert str(caught.value) == (
        "google embeddings failed (HTTP 429): quota (asked to retry after 120s, more than "
        "the 30s this client waits)"
    )
    assert len(stub.requests) == 1


def test_waits_grow_exponentially_with_jitter_without_retry_after(
    make_service: MakeService,
) -> None:
    # given
    with EmbeddingStub("ollama") as stub:
        stub.script(*[Reply(status=502, json={"error": "bad gateway"})] * 3)
        service = make_service(stub, backoff=1.0, max_wait=60.0, max_retries=3)
        waits: list[float] = []
        service.client.sleep = waits.append

        # when
        service.embed(["alpha"])

    # then: each wait lies in the upper half of 1, 2, 4 seconds
    assert len(waits) == 3
    for wait, ceiling in zip(waits, [1.0, 2.0, 4.0], strict=True):
        assert ceiling / 2 <= wait <= ceiling


# Bad bodies


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply(raw=b"<html>gateway</html>"), "the response is not JSON: '<html>gateway</html>'"),
        (Reply(json={"object": "list"}), "malformed response: no 'data' list"),
        (
            Reply(json={"data": [{"index": 0, "embedding": [0.1, 0.2]}]}),
            "malformed response: 1 vectors for 2 texts",
        ),
        (
            Reply(
                json={
                    "data": [
                        {"index": 0, "embedding": [0.1, 0.2]},
                        {"index": 1, "embedding": [0.1, 0.2, 0.3]},
                    ]
                }
            ),
            "malformed response: vectors of different sizes [2, 3]",
        ),
        (
            Reply(
                json={
                    "data": [
                        {"index": 0, "embedding": [0.1, "0.2"]},
                        {"index": 1, "embedding": [0.1, 0.2]},
                    ]
                }
            ),
            "malformed response: vector 0 holds '0.2', not a number",
        ),
        (
            Reply(
                json={
                    "data": [
                        {"index": 0, "embedding": "AAAAAA=="},
                        {"index": 1, "embedding": [0.1, 0.2]},
                    ]
                }
            ),
            "malformed response: vector 0 is not a non-empty list of numbers",
        ),
        (
            Reply(
                json={
                    "data": [
                        {"index": 0, "embedding": [0.1]},
                        {"index": 0, "embedding": [0.2]},
                    ]
                }
            ),
            "malformed response: index 0 appears twice",
        ),
        (
            Reply(
                json={
                    "data": [
                        {"index": 0, "embedding": [0.1]},
                        {"index": 5, "embedding": [0.2]},
                    ]
                }
            ),
            "malformed response: indexes [0, 5] are not 0 to 1",
        ),
    ],
)
def test_a_malformed_openai_body_is_an_error_and_not_retried(
    reply: Reply, problem: str, make_service: MakeService
) -> None:
    # given
    with EmbeddingStub("openai") as stub:
        stub.script(reply)
        service = make_service(stub)

        # when
        with pytest.raises(EmbeddingServiceError) as caught:
            service.embed(["alpha", "beta"])

    # then
    assert str(caught.value) == f"openai embeddings failed: {problem}"
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    ("wire", "body", "problem"),
    [
        ("ollama", {"model": "m"}, "no 'embeddings' list"),
        ("ollama", {"embeddings": [[0.1, float("nan")]]}, "vector 0 holds nan"),
        ("google", {"embeddings": [{"value": [0.1]}]}, "embedding 0 has no 'values'"),
        ("google", {"embeddings": "none"}, "no 'embeddings' list"),
    ],
)
def test_a_malformed_ollama_or_google_body_is_an_error(
    wire: str, body: dict[str, Any], problem: str, make_service: MakeService
) -> None:
    # given
    with EmbeddingStub(wire) as stub:
        stub.script(Reply(json=body))
        service = make_service(stub)

        # when
        with pytest.raises(EmbeddingServiceError) as caught:
            service.embed(["alpha"])

    # then
    assert str(caught.value) == f"{wire} embeddings failed: malformed response: {problem}"


def test_vectors_of_another_size_than_configured_are_an_error(
    stub: EmbeddingStub, make_service: MakeService
) -> None:
    # given: the server ignores the size asked for
    stub.dimensions = 8
    service = make_service(stub, dimensions=4)
    stub.script(Reply(json=_normal_body(stub.wire, ["alpha"], 8)))

    # when
    with pytest.raises(EmbeddingServiceError) as caught:
        service.embed(["alpha"])

    # then
    assert str(caught.value) == (
        f"{stub.wire} embeddings failed: malformed response: vectors have 8 dimensions, expected 4"
    )


def test_a_later_answer_of_another_size_is_an_error(make_service: MakeService) -> None:
    # given
    with EmbeddingStub("ollama") as stub:
        service = make_service(stub)
        service.embed(["alpha"])
        stub.script(Reply(json={"embeddings": [[0.5, 0.5]]}))

        # when
        with pytest.raises(EmbeddingServiceError) as caught:
            service.embed(["beta"])

    # then
    assert str(caught.value) == (
        "ollama embeddings failed: malformed response: vectors have 2 dimensions, expected 8"
    )


def _normal_body(wire: str, inputs: list[str], size: int) -> dict[str, Any]:
    vectors = [fake_vector(text, size) for text in inputs]
    if wire == "openai":
        return {"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]}
    if wire == "ollama":
        return {"embeddings": vectors}
    return {"embeddings": [{"values": v} for v in vectors]}


# Helpers of the retry policy


def test_retry_after_reads_seconds_dates_and_milliseconds() -> None:
    # given
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

    # when
    readings = [
        retry_after_seconds(httpx.Headers(headers), now=now)
        for headers in [
            {"Retry-After": "3"},
            {"Retry-After": "Thu, 01 Jan 2026 12:00:10 GMT"},
            {"Retry-After": "Thu, 01 Jan 2026 11:00:00 GMT"},
            {"retry-after-ms": "1500", "Retry-After": "9"},
            {"Retry-After": "soon"},
            {"Retry-After": "-4"},
            {},
        ]
    ]

    # then
    assert readings == [3.0, 10.0, 0.0, 1.5, None, 0.0, None]


def test_backoff_is_capped_at_max_wait() -> None:
    # when
    waits = [backoff_seconds(10, backoff=1.0, max_wait=8.0) for _ in range(50)]

    # then
    assert all(4.0 <= wait <= 8.0 for wait in waits)
    assert len(set(waits)) > 1


# Construction and settings


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "['BATCH_SIZE'] must be a positive number, got 0."),
        ({"timeout": -1}, "['TIMEOUT'] must be a positive number, got -1."),
        ({"dimensions": 0}, "['DIMENSIONS'] must be a positive number, got 0."),
        ({"max_retries": -1}, "['MAX_RETRIES'] must be a whole number of 0 or more, got -1."),
    ],
)
def test_bad_settings_are_refused_at_construction(options: dict[str, Any], message: str) -> None:
    # when / then
    with pytest.raises(ImproperlyConfigured) as caught:
        OllamaEmbeddings(**options)
    assert str(caught.value) == f"COGITATOR_MEMORY['EMBEDDINGS']{message}"


@pytest.mark.parametrize(
    ("service_class", "label"), [(OpenAIEmbeddings, "OpenAI"), (GoogleEmbeddings, "Google")]
)
def test_the_providers_own_endpoint_needs_an_api_key(
    service_class: type[HTTPEmbeddingService], label: str
) -> None:
    # when / then
    with pytest.raises(ImproperlyConfigured) as caught:
        service_class()
    assert str(caught.value) == (
        f"The {label} embedding provider needs COGITATOR_MEMORY['EMBEDDINGS']['API_KEY']."
    )


def test_providers_default_to_their_public_endpoints_and_models() -> None:
    # when
    services = [
        OpenAIEmbeddings(api_key="k"),
        OllamaEmbeddings(),
        GoogleEmbeddings(api_key="k"),
    ]

    # then
    assert [(s.base_url, s.model) for s in services] == [
        ("https://api.openai.com/v1", "text-embedding-3-small"),
        ("http://localhost:11434", "nomic-embed-text"),
        ("https://generativelanguage.googleapis.com", "gemini-embedding-001"),
    ]


@pytest.mark.parametrize(
    ("provider", "service_class"),
    [("openai", OpenAIEmbeddings), ("ollama", OllamaEmbeddings), ("google", GoogleEmbeddings)],
)
def test_settings_build_each_http_provider(
    provider: str, service_class: type[HTTPEmbeddingService]
) -> None:
    # given
    embeddings = {
        "PROVIDER": provider,
        "MODEL": "some-model",
        "DIMENSIONS": 256,
        "API_KEY": "key",
        "BASE_URL": "http://127.0.0.1:9/",
        "TIMEOUT": 5.0,
        "BATCH_SIZE": 16,
        "MAX_RETRIES": 2,
    }

    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": embeddings}):
        service = get_embedding_service()

    # then
    assert isinstance(service, service_class)
    assert (service.provider, service.model, service.dimensions) == (provider, "some-model", 256)
    assert service.base_url == "http://127.0.0.1:9"
    assert service.batch_size == 16
    assert (service.client.timeout, service.client.max_retries) == (5.0, 2)
    assert service.api_key == "key"


def test_settings_build_the_local_provider_without_loading_a_model() -> None:
    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"PROVIDER": "local"}}):
        service = get_embedding_service()

    # then
    assert isinstance(service, LocalEmbeddings)
    assert (service.provider, service.model) == ("local", "sentence-transformers/all-MiniLM-L6-v2")
    assert service._encoder is None


def test_no_provider_in_settings_means_no_service() -> None:
    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": {"PROVIDER": None}}):
        service = get_embedding_service()

    # then
    assert service is None


def test_a_service_from_settings_embeds_through_the_configured_server(
    stub: EmbeddingStub,
) -> None:
    # given
    embeddings = {"PROVIDER": stub.wire, "API_KEY": "key", "BASE_URL": stub.base_url}

    # when
    with override_settings(COGITATOR_MEMORY={"EMBEDDINGS": embeddings}):
        service = get_embedding_service()
        assert service is not None
        vectors = service.embed(["alpha"])

    # then
    assert vectors == [fake_vector("alpha")]
    assert len(stub.requests) == 1
