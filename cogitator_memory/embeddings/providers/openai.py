"""OpenAI embeddings, and any server that speaks OpenAI's ``/embeddings`` with a bearer key
or none (vLLM, LM Studio, llama.cpp's server, LiteLLM): point ``BASE_URL`` at its ``/v1``."""

from __future__ import annotations

from typing import Any

from cogitator_memory.embeddings.providers.http import HTTPEmbeddingService, require_api_key

OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAIEmbeddings(HTTPEmbeddingService):
    """``POST {base_url}/embeddings`` with ``{"model", "input": [...], "dimensions"?}``.

    ``dimensions`` shortens the vectors server-side (text-embedding-3 models); other
    models refuse it with a 400. An API key is required for OpenAI itself only.
    """

    provider = "openai"
    default_model = "text-embedding-3-small"
    default_base_url = OPENAI_BASE_URL
    # OpenAI takes at most 2,048 inputs per request.
    max_batch_size = 2048

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        require_api_key(self, "OpenAI")

    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    def request_body(self, batch: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self.requested_dimensions is not None:
            body["dimensions"] = self.requested_dimensions
        return body

    def response_vectors(self, payload: Any) -> list[Any]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            self.malformed("no 'data' list")
        by_index: dict[int, Any] = {}
        for item in data:
            index = item.get("index") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int):
                self.malformed("an item of 'data' has no whole-number 'index'")
            if index in by_index:
                self.malformed(f"index {index} appears twice")
            by_index[index] = item.get("embedding")
        # The API documents no order for 'data'; 'index' is what ties a vector to its text.
        if sorted(by_index) != list(range(len(by_index))):
            self.malformed(f"indexes {sorted(by_index)} are not 0 to {len(by_index) - 1}")
        return [by_index[index] for index in range(len(by_index))]
