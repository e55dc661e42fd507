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
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

DEFAULT_DIMENSIONS = 8
# Each wire's base URL below the stub's root, as a provider's BASE_URL setting gives it.
BASE_PATHS = {"openai": "/v1", "ollama": "", "google": ""}


def fake_vector(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """A vector that depends only on the text, so a test can tell which text it belongs to."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 128 for i in range(dimensions)]


@dataclass(frozen=True)
class Reply:
    """A scripted answer. With neither ``json`` nor ``raw`` it is the normal answer,
    sent after ``delay`` seconds (a delay past the client's timeout makes a timeout)."""

    status: int = 200
    json: Any = None
    raw: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    # Header names lower-cased.
    headers: dict[str, str]
    body: Any


class EmbeddingStub:
    """Use as a context manager: the server runs inside the ``with`` block."""

    def __init__(self, wire: str, *, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        if wire not in BASE_PATHS:
            raise ValueError(f"unknown wire format {wire!r}")
        self.wire = wire
        self.dimensions = dimensions
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> EmbeddingStub:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # Wakes handlers still sleeping out a scripted delay.
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def root(self) -> str:
        assert self._server is not None, "the stub is not running"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """What the provider's BASE_URL setting should be to reach this stub."""
        return self.root + BASE_PATHS[self.wire]

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

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

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                url = urlsplit(self.path)
                request = RecordedRequest(
                    method="POST",
                    path=url.path,
                    query=parse_qs(url.query),
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                )
                with stub._lock:
                    stub.requests.append(request)
                reply = stub._next_reply() or Reply()
                if reply.delay and stub._stopping.wait(reply.delay):
                    return
                if reply.raw is not None:
                    status, payload = reply.status, reply.raw
                elif reply.json is not None:
                    status, payload = reply.status, json.dumps(reply.json).encode()
                else:
                    status, payload = stub.answer(request)
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up waiting (a scripted timeout).
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
