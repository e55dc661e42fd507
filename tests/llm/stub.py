"""A loopback HTTP server that speaks the model providers' wire formats.

``ModelStub("openai")`` answers ``POST /v1/chat/completions`` as OpenAI (and every
OpenAI-compatible server) does, ``ModelStub("anthropic")`` ``POST /v1/messages``,
``ModelStub("google")`` ``POST /<version>/models/<model>:generateContent``. It records every
request and answers ``"answer to: <last message>"`` unless replies were scripted with
``script()``: those are used first, one per request, to cut, fail, stall or send a bad body.
Scripted ``Reply`` objects and recorded requests are those of the embedding stub.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.embeddings.http_stub import RecordedRequest, Reply

__all__ = ["ModelStub", "RecordedRequest", "Reply"]

# Each wire's base URL below the stub's root, as the LLM BASE_URL setting gives it.
BASE_PATHS = {"openai": "/v1", "anthropic": "", "google": ""}
# Header that makes the OpenAI and Anthropic SDKs wait 1 ms before a retry, not 0.5 s or more.
QUICK_RETRY = {"retry-after-ms": "1"}


class ModelStub:
    """Use as a context manager: the server runs inside the ``with`` block."""

    def __init__(self, wire: str) -> None:
        if wire not in BASE_PATHS:
            raise ValueError(f"unknown wire format {wire!r}")
        self.wire = wire
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ModelStub:
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
        """What the LLM BASE_URL setting should be to reach this stub."""
        return self.root + BASE_PATHS[self.wire]

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def body(
        self,
        text: str | None,
        *,
        truncated: bool = False,
        model: str = "stub-model",
        usage: tuple[int, int] | None = (11, 7),
    ) -> dict[str, Any]:
        """An answer in this wire's format; ``text`` None leaves the answer without text."""
        if self.wire == "openai":
            message: dict[str, Any] = {"role": "assistant", "content": text}
            body: dict[str, Any] = {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "length" if truncated else "stop",
                    }
                ],
            }
            if usage is not None:
                body["usage"] = {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": sum(usage),
                }
            return body
        if self.wire == "anthropic":
            body = {
                "id": "msg_stub",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [] if text is None else [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if truncated else "end_turn",
                "stop_sequence": None,
            }
            if usage is not None:
                body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
            return body
        parts = [] if text is None else [{"text": text}]
        body = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": parts},
                    "finishReason": "MAX_TOKENS" if truncated else "STOP",
                    "index": 0,
                }
            ],
            "modelVersion": model,
        }
        if usage is not None:
            body["usageMetadata"] = {
                "promptTokenCount": usage[0],
                "candidatesTokenCount": usage[1],
                "totalTokenCount": sum(usage),
            }
        return body

    def last_text(self, request: RecordedRequest) -> str:
        """The text of the last message one recorded request sent."""
        if self.wire == "google":
            return str(request.body["contents"][-1]["parts"][-1]["text"])
        content = request.body["messages"][-1]["content"]
        if isinstance(content, list):
            return str(content[-1]["text"])
        return str(content)

    def answer(self, request: RecordedRequest) -> tuple[int, bytes]:
        """The normal answer to ``request``."""
        routes = {
            "openai": request.path == "/v1/chat/completions",
            "anthropic": request.path == "/v1/messages",
            "google": request.path.startswith(("/v1/models/", "/v1beta/models/"))
            and request.path.endswith(":generateContent"),
        }
        if not routes[self.wire]:
            return 404, json.dumps({"error": {"message": f"no route {request.path}"}}).encode()
        if self.wire == "google":
            model = request.path.split("/models/", 1)[1].removesuffix(":generateContent")
        else:
            model = request.body["model"]
        body = self.body(f"answer to: {self.last_text(request)}", model=model)
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
