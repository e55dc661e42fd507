"""Google's Gemini API embeddings (``batchEmbedContents``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from cogitator_memory.embeddings.providers.http import HTTPEmbeddingService, require_api_key

GOOGLE_BASE_URL = "https://generativelanguage.googleapis.com"


class GoogleEmbeddings(HTTPEmbeddingService):
    """``POST {base_url}/v1beta/models/{model}:batchEmbedContents``, one request object per
    text, answered with ``{"embeddings": [{"values": [...]}, ...]}`` in input order.

    The key travels in the ``x-goog-api-key`` header rather than the query string, so it
    stays out of URLs, logs and error messages. ``dimensions`` becomes each request's
    ``outputDimensionality``.
    """

    provider = "google"
    default_model = "gemini-embedding-001"
    default_base_url = GOOGLE_BASE_URL
    # batchEmbedContents takes at most 100 requests per call.
    max_batch_size = 100

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # Both "gemini-embedding-001" and "models/gemini-embedding-001" name the model.
        self.model = self.model.removeprefix("models/")
        require_api_key(self, "Google")

    def auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.api_key} if self.api_key else {}

    def url(self) -> str:
        return f"{self.base_url}/v1beta/models/{quote(self.model)}:batchEmbedContents"

    def request_body(self, batch: list[str]) -> dict[str, Any]:
        requests = []
        for text in batch:
            request: dict[str, Any] = {
                "model": f"models/{self.model}",
                "content": {"parts": [{"text": text}]},
            }
            if self.requested_dimensions is not None:
                request["outputDimensionality"] = self.requested_dimensions
            requests.append(request)
        return {"requests": requests}

    def response_vectors(self, payload: Any) -> list[Any]:
        embeddings = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(embeddings, list):
            self.malformed("no 'embeddings' list")
        vectors = []
        for position, embedding in enumerate(embeddings):
            if not isinstance(embedding, dict) or "values" not in embedding:
                self.malformed(f"embedding {position} has no 'values'")
            vectors.append(embedding["values"])
        return vectors
