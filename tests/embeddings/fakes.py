"""A deterministic embedding service for tests, chosen like a real provider:

    override_settings(COGITATOR_MEMORY={"EMBEDDINGS": HASH_EMBEDDINGS})

``HashEmbeddings`` turns each text into a vector derived from its SHA-256, so one text
always gets one vector and different texts get different ones. The class records every
call, can be told to fail chosen calls or to run something while it embeds;
``HashEmbeddings.reset()`` clears all of that. ``LoggedHashEmbeddings`` also writes what
it embeds to a file, for a worker in another process to tell the test.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from cogitator_memory.exceptions import EmbeddingServiceError

DIMENSIONS = 16

HASH_EMBEDDINGS: dict[str, Any] = {
    "PROVIDER": "tests.embeddings.fakes.HashEmbeddings",
    "MODEL": "hash-1",
    "DIMENSIONS": DIMENSIONS,
    # The message index is the same on every store; the store suites test the stores.
    "STORE": "exact",
}


def hash_vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """Numbers in [-1, 1] read from the SHA-256 chain of ``text``; never all zero."""
    values: list[float] = []
    block = text.encode()
    while len(values) < dimensions:
        block = hashlib.sha256(block).digest()
        values.extend((number / 0x7FFFFFFF) for number in struct.unpack("<8i", block))
    vector = values[:dimensions]
    vector[0] = vector[0] or 1.0
    return vector


class HashEmbeddings:
    provider = "hash"

    # Texts of every embed() call, in order, across instances.
    calls: ClassVar[list[list[str]]] = []
    # Call number (1 for the first call since reset) -> what that call raises.
    failures: ClassVar[dict[int, BaseException]] = {}
    # Run inside each call, to change the world while texts are being embedded.
    during_embed: ClassVar[Callable[[], None] | None] = None

    def __init__(
        self, *, model: str | None = None, dimensions: int | None = None, **options: Any
    ) -> None:
        self.model = model or "hash-1"
        self.dimensions = dimensions or DIMENSIONS
        self.options = options

    @classmethod
    def reset(cls) -> None:
        cls.calls.clear()
        cls.failures.clear()
        cls.during_embed = None

    @classmethod
    def fail_on(cls, call: int, error: BaseException | None = None) -> None:
        """Make call number ``call`` raise ``error`` (a provider error by default)."""
        cls.failures[call] = error or EmbeddingServiceError("hash", "unavailable", status=503)

    @classmethod
    def texts(cls) -> list[str]:
        """Every text embedded since reset, in order."""
        return [text for call in cls.calls for text in call]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        HashEmbeddings.calls.append(list(texts))
        if HashEmbeddings.during_embed is not None:
            HashEmbeddings.during_embed()
        failure = HashEmbeddings.failures.pop(len(HashEmbeddings.calls), None)
        if failure is not None:
            raise failure
        return [hash_vector(text, self.dimensions) for text in texts]


# The file ``LoggedHashEmbeddings`` appends to (an environment variable, so a worker
# started with it writes where the test reads).
EMBEDDINGS_LOG_VARIABLE = "COGITATOR_TEST_EMBEDDINGS_LOG"


class LoggedHashEmbeddings(HashEmbeddings):
    """``HashEmbeddings`` that also appends each text it is sent, as a JSON line, to the
    file named by ``COGITATOR_TEST_EMBEDDINGS_LOG`` (when set)."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        path = os.environ.get(EMBEDDINGS_LOG_VARIABLE)
        if path:
            with open(path, "a", encoding="utf-8") as log:
                log.writelines(json.dumps(text) + "\n" for text in texts)
        return super().embed(texts)
