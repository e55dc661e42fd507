"""A loopback HTTP server that speaks the embedding providers' wire formats.

``EmbeddingStub("openai")`` answers ``POST /v1/embeddings`` as OpenAI does,
``EmbeddingStub("ollama")`` ``POST /api/embed``, ``EmbeddingStub("google")``
``POST /v1beta/models/<model>:batchEmbedContents``. It records every request, and answers
with ``fake_vector(text)`` for each text unless replies were scripted with ``script()``:
those are used first, one per request, to fail, stall or send a bad body.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.loopback_stub import LoopbackStub, RecordedRequest, Reply

__all__ = ["DEFAULT_DIMENSIONS", "EmbeddingStub", "RecordedRequest", "Reply", "fake_vector"]

DEFAULT_DIMENSIONS = 8
# Each wire's base URL below the stub's root, as a provider's BASE_URL setting gives it.
BASE_PATHS = {"openai": "/v1", "ollama": "", "google": ""}


def fake_vector(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """A vector that depends only on the text, so a test can tell which text it belongs to."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 128 for i in range(dimensions)]


class EmbeddingStub(LoopbackStub):
    """Use as a context manager: the server runs inside the ``with`` block."""

    BASE_PATHS = BASE_PATHS

    def __init__(self, wire: str, *, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        super().__init__(wire)
        self.dimensions = dimensions

    def texts_of(self, request: RecordedRequest) -> list[str]:
        """The texts one recorded request asked to embed."""
        if self.wire == "google":
            return [item["content"]["parts"][0]["text"] for item in request.body["requests"]]
        return list(request.body["input"])

    def answer(self, request: RecordedRequest) -> tuple[int, bytes]:
        """The normal answer to ``request``: one ``fake_vector`` per text."""
        if self.wire == "openai" and request.path == "/v1/embeddings":
            size = request.body.get("dimensions", self.dimensions)
            data = [
                {"object": "embedding", "index": index, "embedding": fake_vector(text, size)}
                for index, text in enumerate(request.body["input"])
            ]
            # Reversed, to show that clients order by "index", not by position.
            body: Any = {
                "object": "list",
                "data": data[::-1],
                "model": request.body["model"],
                "usage": {"prompt_tokens": len(data), "total_tokens": len(data)},
            }
        elif self.wire == "ollama" and request.path == "/api/embed":
            size = request.body.get("dimensions", self.dimensions)
            body = {
                "model": request.body["model"],
                "embeddings": [fake_vector(text, size) for text in request.body["input"]],
            }
        elif (
            self.wire == "google"
            and request.path.startswith("/v1beta/models/")
            and request.path.endswith(":batchEmbedContents")
        ):
            body = {
                "embeddings": [
                    {
                        "values": fake_vector(
                            item["content"]["parts"][0]["text"],
                            item.get("outputDimensionality", self.dimensions),
                        )
                    }
                    for item in request.body["requests"]
                ]
            }
        else:
            return 404, json.dumps({"error": f"no route {request.path}"}).encode()
        return 200, json.dumps(body).encode()
