"""Ollama embeddings over its native API (``/api/embed``, Ollama 0.3.4 and later)."""

from __future__ import annotations

from typing import Any

from cogitator_memory.embeddings.providers.http import HTTPEmbeddingService

OLLAMA_BASE_URL = "http://localhost:11434"


class OllamaEmbeddings(HTTPEmbeddingService):
    """``POST {base_url}/api/embed`` with ``{"model", "input": [...], "dimensions"?}``,
    answered with ``{"embeddings": [[...], ...]}`` in input order.

    Ollama itself needs no key; an ``API_KEY`` is sent as a bearer token, for Ollama behind
    an authenticating proxy. ``dimensions`` needs an Ollama that supports it.
    """

    provider = "ollama"
    default_model = "nomic-embed-text"
    default_base_url = OLLAMA_BASE_URL

    def url(self) -> str:
        return f"{self.base_url}/api/embed"

    def request_body(self, batch: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self.requested_dimensions is not None:
            body["dimensions"] = self.requested_dimensions
        return body

    def response_vectors(self, payload: Any) -> list[Any]:
        embeddings = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(embeddings, list):
            self.malformed("no 'embeddings' list")
        return embeddings
